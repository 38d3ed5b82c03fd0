"""The rules for reading compiled HLO, each checked on real HLO text.

The programs are in tests/grader/suite/data/make_hlo.py (4 emulated CPU devices, the grader's own
compile call); their HLO is committed under tests/grader/suite/data/hlo/.
"""

from pathlib import Path

import pytest

from grader.suite import hlo, structure

DATA = Path(__file__).parent / "data" / "hlo"


def program(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def test_shape_bytes_reads_arrays_and_tuples():
    assert hlo.shape_bytes("f32[4,10]{1,0}") == (1, 160)
    assert hlo.shape_bytes("(f32[3]{0}, bf16[2,2]{1,0}, s32[])") == (3, 12 + 8 + 4)


def test_partitioner_collectives_are_not_the_students():
    text = program("dot_with_squeeze")
    origins = sorted(c.origin for c in hlo.collectives(text))
    assert origins == ["psum", "squeeze"]  # [0] on a sharded result adds an all-reduce of its own
    assert hlo.count(text, "all-reduce") == 2
    assert hlo.count(text, "all-reduce", by_student=True) == 1
    assert hlo.bytes_moved(text, "all-reduce", by_student=True) == 4  # one f32 scalar


def test_merged_psums_are_one_instruction_with_several_operands():
    text = program("merged_psums")
    (merged,) = hlo.collectives(text)
    # psum(a), psum(2a), psum(a) again and pmean(sum(a)): the duplicate is dropped, the rest merged.
    assert (merged.op, merged.operands, merged.times) == ("all-reduce", 3, 1)
    assert merged.bytes == 3 * 4 + 3 * 4 + 4
    assert hlo.count(text, "all-reduce", by_student=True) == 1


def test_pmean_is_a_psum_whose_result_is_divided():
    text = program("pmean_only")
    (reduce,) = hlo.collectives(text)
    assert reduce.origin == "pmean" and reduce.by_student
    assert "constant(0.25)" in text  # the divide by 4 devices, after the all-reduce
    (merged,) = hlo.collectives(program("merged_psums"))  # one of three merged is a pmean: read as the first
    assert merged.origin == "psum"
    assert [c.origin for c in hlo.collectives(program("dot_with_squeeze"))][0] == "psum"  # a psum divided by nothing


def test_loop_trip_count_multiplies_a_collective():
    text = program("ring_fori")
    (permute,) = hlo.collectives(text)
    assert (permute.op, permute.times, permute.bytes) == ("collective-permute", 3, 6 * 4)
    assert permute.groups == ((0, 1), (1, 2), (2, 3), (3, 0))
    assert hlo.count(text, "collective-permute", by_student=True) == 3
    assert hlo.bytes_moved(text, "collective-permute") == 3 * 6 * 4


def test_nested_loops_multiply():
    text = program("nested_loops")
    assert [c.times for c in hlo.collectives(text)] == [2 * 3]
    assert hlo.bytes_moved(text) == 6 * 7 * 4


def test_unknown_trip_count_is_not_guessed():
    text = program("while_unknown")
    assert [c.times for c in hlo.collectives(text)] == [None]
    assert hlo.count(text, "collective-permute") is None
    assert hlo.bytes_moved(text) is None
    assert hlo.count(text, "all-reduce") == 0  # other ops are still counted exactly


def test_a_collective_in_a_branch_counts_as_if_the_branch_ran():
    text = program("cond_branch")
    (permute,) = hlo.collectives(text)
    assert (permute.op, permute.times, permute.bytes) == ("collective-permute", 1, 3 * 4)
    assert "conditional(" in text and permute.computation != hlo.parse_computations(text)[1]  # not ENTRY


def test_bytes_come_from_operands_not_results():
    (gather,) = hlo.collectives(program("all_gather_sum"))
    assert hlo.shape_bytes(gather.shape)[1] == 4 * 10 * 4  # every device receives 4 blocks...
    assert gather.bytes == 10 * 4                           # ...and sends its own one


def test_shard_map_psum_reads_as_psum_with_its_mesh_groups():
    text = program("mesh_matmul")
    (reduce,) = hlo.collectives(text)
    assert reduce.origin == "psum" and "psum_invariant" in text
    assert reduce.groups == ((0, 1), (2, 3))  # the rows of a 2 x 2 ('data', 'model') mesh


@pytest.mark.parametrize("ops", ["all-gather", ("all-gather", "all-to-all")])
def test_count_takes_one_opcode_or_several(ops):
    assert hlo.count(program("all_gather_sum"), ops) == 1


def test_select_keeps_the_students_collectives_of_the_given_kinds():
    text = program("dot_with_squeeze")
    assert [c.origin for c in hlo.select(text, "all-reduce")] == ["psum", "squeeze"]
    assert [c.origin for c in hlo.select(text, by_student=True)] == ["psum"]
    assert hlo.select(text, ("all-gather", "collective-permute")) == []


def test_the_programs_own_collectives_are_told_by_their_kind_whatever_their_label():
    text = program("dot_with_squeeze").replace("stablehlo.all_reduce:psum", "stablehlo.all_reduce:squeeze")
    (mine,) = hlo.select(text, "all-reduce", by_student=True)  # a label that lies changes only the wording
    assert (mine.kind, mine.origin) == ("stablehlo.all_reduce", "squeeze")
    added = [c for c in hlo.collectives(text) if not c.by_student]
    assert [(c.kind, c.origin) for c in added] == [("stablehlo.reshape", "squeeze")]


def test_a_collective_is_named_with_its_article_and_psum_scatter_by_its_lax_name():
    text = program("dot_with_squeeze").replace("stablehlo.all_reduce:psum", "stablehlo.reduce_scatter:reduce_scatter")
    assert [c.origin for c in hlo.collectives(text)][0] == "psum_scatter"
    (mine,) = hlo.select(text, "all-reduce")[:1]
    assert mine.a == "an all-reduce"
    assert hlo.Collective("collective-permute", "f32[2]", 1, 8, 1, "ppermute", "main").a == "a collective-permute"


def test_hlo_not_named_by_a_clean_worker_has_no_collective_of_the_students():
    text = program("dot_with_squeeze").replace("stablehlo.all_reduce:psum", "psum")
    assert [c.origin for c in hlo.collectives(text)] == ["psum", "squeeze"]
    assert hlo.select(text, by_student=True) == []


@pytest.mark.parametrize("name, reads, feeds", [
    ("psum_of_a_constant", False, True),
    ("psum_of_times_zero", False, True),
    ("psum_times_zero", True, False),
])
def test_a_collective_that_carries_nothing_the_result_needs_is_idle_and_not_counted(name, reads, feeds):
    text = program(name)
    psum = next(c for c in hlo.collectives(text) if c.by_student)
    assert (psum.reads_input, psum.feeds_output, psum.idle) == (reads, feeds, True)
    assert hlo.count(text, "all-reduce", by_student=True) == 0 and hlo.bytes_moved(text, by_student=True) == 0
    assert hlo.select(text, "all-reduce") == []


def test_operations_are_a_devices_share_when_it_computes_on_its_part_and_the_whole_when_it_does_not():
    # the dot of 16 numbers over 4 devices: 4 multiply-adds; the offset of the device's slice (its id times 4)
    # computes on no input, whatever the inputs the same: no work; its psum and XLA's all-reduce for the squeeze,
    # each 3/4 of an add of one number on every device, are counted exactly, then the whole rounded
    assert hlo.operations(program("dot_with_squeeze")) == round(2 * 16 / 4 + 2 * 3 / 4)
    # a (3, 4) block of x times a (4, 3) block of w, and its half of the adds of the psum over 'model' (2 devices)
    assert hlo.operations(program("mesh_matmul")) == round(2 * 3 * 3 * 4 + 3 * 3 / 2)
    assert hlo.operations(program("scatter_columns")) == 4 * 8 // 2  # its (4, 8) block: a reduce-scatter adds too
    for name in ("psum_of_a_constant", "psum_of_a_difference"):  # x of 4 x 5 summed whole on every device, and more
        assert hlo.operations(program(name)) >= 4 * 5
    difference = next(c for c in hlo.collectives(program("psum_of_a_difference")) if c.by_student)
    assert not difference.idle  # row - row: only the work tells this program from a distributed one


def test_a_ring_overlaps_its_steps_only_where_a_product_can_run_while_a_block_travels():
    block = 2 * 2 * 3 * 5  # a (2, 3) block of x by a (3, 5) w, two operations per multiply-add
    assert hlo.largest_product(program("ring_matmul")) == hlo.largest_product(program("ring_matmul_barrier")) == block
    assert hlo.overlapped(program("ring_matmul"), block) == 3  # each of the n - 1 ppermutes beside a product
    assert hlo.overlapped(program("ring_matmul_barrier"), block) == 0  # every product waits for the whole ring
    assert hlo.overlapped(program("ring_matmul_decoys"), block) == 0  # and decoys beside it, times zero, are none
    assert hlo.overlapped(program("ring_matmul"), block + 1) == 0  # no product that large
    assert hlo.overlapped(program("ring_fori"), 1) == 0  # a ring all-reduce runs no product at all


def test_a_step_overlaps_only_a_product_of_the_block_it_sends_in_one_chain_or_two():
    half = 2 * 1 * 3 * 5  # half a (2, 3) block of x by a (3, 5) w
    # each direction's halves multiplied as they arrive: beside each step after the first, the product of the half it
    # sends; the own block, multiplied whole, beside both first steps, which send its halves either way (5 before
    # round 54, when one product counted beside one step only; 3 before XLA's "/*index=5*/" comment was read: it hid
    # two of the seven products joined at the end)
    assert hlo.overlapped(program("ring_matmul_both_ways"), half) == 6
    # the two halves that arrive in a step joined and multiplied as one block while they travel on
    # (the own block's beside both first sends, as above; each later product reads two sends of its step, and one
    # product is counted beside one send unless they send the same data)
    assert hlo.overlapped(program("ring_matmul_both_ways_merged"), half) == 4
    # whole blocks both ways, n - 1 = 3 ppermutes in all: the own block's product runs beside both first sends, which
    # send it either way, and each block that arrives is multiplied while the next one travels
    assert hlo.overlapped(program("ring_matmul_both_ways_whole"), 2 * half) == 3
    # each direction's halves, or each of two chains of one direction, behind a barrier of its own: a chain's
    # products run after it, beside the other chain's steps, which send none of what they multiply; the own
    # block's product overlaps the first steps that send its halves different ways: two both ways, one in a single
    # direction (the same data sent twice the same way is one step's)
    assert hlo.overlapped(program("ring_matmul_both_ways_barrier"), half) == 2
    assert hlo.overlapped(program("ring_matmul_two_chains_barrier"), half) == 1


def test_products_count_each_block_multiplied_and_a_product_run_again_on_top():
    block = 2 * 2 * 3 * 5  # a (2, 3) block of x by a (3, 5) w, two operations per multiply-add
    assert hlo.products(program("ring_matmul")) == hlo.products(program("ring_matmul_barrier")) == 4 * block
    assert hlo.products(program("ring_matmul_decoys")) == 7 * block  # three decoys beside the ring's four blocks
    assert hlo.products(program("ring_fori")) == 0 < hlo.operations(program("ring_fori"))  # sums are no products


def test_a_product_written_as_a_multiply_of_two_inputs_counts_and_one_by_a_constant_does_not():
    text = ("HloModule m\n\nENTRY %main (x: f32[6,5], y: f32[6,5]) -> (f32[6,5], f32[6,5]) {\n"
            "  %x = f32[6,5]{1,0} parameter(0)\n  %y = f32[6,5]{1,0} parameter(1)\n"
            "  %m = f32[6,5]{1,0} multiply(f32[6,5]{1,0} %x, f32[6,5]{1,0} %y)\n  %c = f32[] constant(3)\n"
            "  %b = f32[6,5]{1,0} broadcast(f32[] %c), dimensions={}\n"
            "  %s = f32[6,5]{1,0} multiply(f32[6,5]{1,0} %x, f32[6,5]{1,0} %b)\n"
            "  ROOT %t = (f32[6,5]{1,0}, f32[6,5]{1,0}) tuple(%m, %s)\n}\n")
    assert hlo.products(text) == hlo.largest_product(text) == 2 * 30  # x * y: a multiply-add each, as a dot counts
    assert hlo.operations(text) == 2 * 30  # and x * 3 is arithmetic, but no product
    divided = text.replace("multiply(f32[6,5]{1,0} %x, f32[6,5]{1,0} %y)", "divide(f32[6,5]{1,0} %x, f32[6,5]{1,0} %y)")
    assert hlo.products(divided) == 2 * 30  # x / y multiplies x by y's reciprocal: a product as well


def test_operations_in_a_loop_count_every_iteration_and_an_unknown_trip_count_is_not_guessed():
    # an add of one 6-number block, n - 1 = 3 times; the loop's counter is the same for every input: no work
    assert hlo.operations(program("ring_fori")) == 3 * 6
    assert hlo.operations(program("while_unknown")) is None
    # round 52: a dot one element at a time, a multiply and an add for each of 10; its counter and the index it wraps
    # are bookkeeping, while its sum, which starts from a constant 0 too, carries the inputs after one step
    assert hlo.operations(program("dot_fori_elements")) == round(2 * 10 + 3 / 4)  # and 3/4 of its psum's add


def test_a_complex_product_counts_four_real_ones():
    # round 54: two real (2, 3) blocks packed into one complex block and multiplied by a (3, 5) w in one dot
    real = 2 * 2 * 3 * 5
    assert hlo.largest_product(program("dot_complex")) == hlo.products(program("dot_complex")) == 4 * real


def test_a_map_counts_its_computation_once_per_element_and_a_reducer_is_not_counted_again():
    mapped = ("HloModule m\n\n%body (a: f32[], b: f32[], c: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
              "  %b = f32[] parameter(1)\n  %c = f32[] parameter(2)\n  %m = f32[] multiply(f32[] %a, f32[] %b)\n"
              "  ROOT %s = f32[] add(f32[] %m, f32[] %c)\n}\n\n"
              "ENTRY %main (x: f32[6,5], y: f32[6,5], z: f32[6,5]) -> f32[6,5] {\n  %x = f32[6,5]{1,0} parameter(0)\n"
              "  %y = f32[6,5]{1,0} parameter(1)\n  %z = f32[6,5]{1,0} parameter(2)\n"
              "  ROOT %r = f32[6,5]{1,0} map(f32[6,5]{1,0} %x, f32[6,5]{1,0} %y, f32[6,5]{1,0} %z), dimensions={0,1}, "
              "to_apply=%body\n}\n")
    assert hlo.operations(mapped) == 30 * 2  # a multiply and an add for each of the 30 elements
    assert hlo.products(mapped) == hlo.largest_product(mapped) == 30 * 2  # its multiply of two inputs: a product
    summed = ("HloModule m\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
              "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n\n"
              "ENTRY %main (x: f32[6,5]) -> f32[6] {\n  %x = f32[6,5]{1,0} parameter(0)\n"
              "  %zero = f32[] constant(0)\n"
              "  ROOT %r = f32[6]{0} reduce(f32[6,5]{1,0} %x, f32[] %zero), dimensions={1}, to_apply=%add\n}\n")
    assert hlo.operations(summed) == 30  # each element added once; the reducer is not a run of its own
    assert hlo.products(summed) == 0  # and it multiplies nothing


def test_a_loop_fusion_counts_each_instruction_once_per_element_of_its_output():
    text = ("HloModule m\n\n%sliced (p: f32[16,3], q: f32[16,3]) -> f32[2,3] {\n  %p = f32[16,3]{1,0} parameter(0)\n"
            "  %q = f32[16,3]{1,0} parameter(1)\n  %m = f32[16,3]{1,0} multiply(f32[16,3]{1,0} %p, f32[16,3]{1,0} %q)\n"
            "  %a = f32[16,3]{1,0} add(f32[16,3]{1,0} %m, f32[16,3]{1,0} %p)\n"
            "  ROOT %s = f32[2,3]{1,0} slice(f32[16,3]{1,0} %a), slice={[2:4], [0:3]}\n}\n\n"
            "ENTRY %main (x: f32[16,3], y: f32[16,3]) -> f32[2,3] {\n  %x = f32[16,3]{1,0} parameter(0)\n"
            "  %y = f32[16,3]{1,0} parameter(1)\n"
            "  ROOT %f = f32[2,3]{1,0} fusion(f32[16,3]{1,0} %x, f32[16,3]{1,0} %y), kind=kLoop, calls=%sliced\n}\n")
    assert hlo.operations(text) == 2 * 6  # the multiply and the add for the 6 elements it keeps, not for 48
    assert hlo.products(text) == hlo.largest_product(text) == 2 * 6
    assert hlo.operations(text.replace("kind=kLoop", "kind=kInput")) == 2 * 48  # any other fusion: as it is written


def test_operations_add_up_every_instruction_so_a_computation_in_pieces_counts_whole():
    one = ("HloModule m\n\nENTRY %main (a: f32[8,4], b: f32[4,2]) -> f32[8,2] {\n"
           "  %a = f32[8,4]{1,0} parameter(0)\n  %b = f32[4,2]{1,0} parameter(1)\n"
           "  ROOT %d = f32[8,2]{1,0} dot(f32[8,4]{1,0} %a, f32[4,2]{1,0} %b), lhs_contracting_dims={1}, "
           "rhs_contracting_dims={0}\n}\n")
    halves = ("HloModule m\n\nENTRY %main (a: f32[8,4], b: f32[4,2]) -> f32[8,2] {\n"
              "  %a = f32[8,4]{1,0} parameter(0)\n  %b = f32[4,2]{1,0} parameter(1)\n"
              "  %top = f32[4,4]{1,0} slice(f32[8,4]{1,0} %a), slice={[0:4], [0:4]}\n"
              "  %low = f32[4,4]{1,0} slice(f32[8,4]{1,0} %a), slice={[4:8], [0:4]}\n"
              "  %d0 = f32[4,2]{1,0} dot(f32[4,4]{1,0} %top, f32[4,2]{1,0} %b), lhs_contracting_dims={1}, "
              "rhs_contracting_dims={0}\n"
              "  %d1 = f32[4,2]{1,0} dot(f32[4,4]{1,0} %low, f32[4,2]{1,0} %b), lhs_contracting_dims={1}, "
              "rhs_contracting_dims={0}\n"
              "  ROOT %y = f32[8,2]{1,0} concatenate(f32[4,2]{1,0} %d0, f32[4,2]{1,0} %d1), dimensions={0}\n}\n")
    assert hlo.operations(one) == hlo.operations(halves) == 2 * 8 * 2 * 4  # 64 multiply-adds either way


def test_a_reduction_counts_its_reducers_arithmetic_at_every_element():
    """A reduction of two inputs at once whose reducer multiplies and adds computes a dot product: counted as
    its elements times the reducer's arithmetic, not as its largest input once."""
    text = ("HloModule m\n\n%red (a: f32[], b: f32[], c: f32[], d: f32[]) -> (f32[], f32[]) {\n"
            "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  %c = f32[] parameter(2)\n"
            "  %d = f32[] parameter(3)\n  %p = f32[] multiply(f32[] %c, f32[] %d)\n"
            "  %s = f32[] add(f32[] %a, f32[] %p)\n  ROOT %t = (f32[], f32[]) tuple(f32[] %s, f32[] %b)\n}\n\n"
            "ENTRY %main (x: f32[16], y: f32[16]) -> (f32[], f32[]) {\n"
            "  %x = f32[16]{0} parameter(0)\n  %y = f32[16]{0} parameter(1)\n  %z = f32[] constant(0)\n"
            "  ROOT %r = (f32[], f32[]) reduce(f32[16]{0} %x, f32[16]{0} %y, f32[] %z, f32[] %z), dimensions={0}, "
            "to_apply=%red\n}\n")
    assert hlo.operations(text) == 16 * 2  # a product and a sum at each of 16 elements


def test_the_partitioners_groups_read_in_their_iota_and_mesh_axes_forms():
    gather, reduce = hlo.collectives(program("jit_contraction"))
    assert "replica_groups=[2,2]<=[2,2]T(1,0)" in program("jit_contraction")
    assert (gather.op, gather.groups) == ("all-gather", ((0, 2), (1, 3)))   # the columns of the 2 x 2 mesh: 'data'
    assert (reduce.op, reduce.groups) == ("all-reduce", ((0, 1), (2, 3)))   # its rows: 'model'


def test_output_shapes_are_one_devices_blocks():
    assert hlo.output_shapes(program("split_outputs")) == [(3, 4), (4,)]   # (6, 8) over 2 x 2, (8,) over 'model'
    assert hlo.output_shapes(program("jit_contraction")) == [(6, 10)]      # replicated: the whole array
    assert hlo.output_shapes("HloModule m\n") is None


def test_operations_in_words_say_how_to_make_an_uncounted_loop_countable():
    assert hlo.in_words(45) == "45 arithmetic operations"
    assert "lax.fori_loop with fixed bounds" in hlo.in_words(None)


MEASURED = 'op_name="jit(call)/call_exported/sdy.manual_computation:shard_map/stablehlo.all_reduce:psum"'


@pytest.mark.parametrize("name, idle, operands", [
    # the clean worker's measurement travels in the name: ":cN" for the program's collective N, ":idle" after it
    # when the answer did not depend on it; it decides whatever the data flow says
    ("stablehlo.all_reduce:psum:c0", False, 3),
    ("stablehlo.all_reduce:psum:c0:idle", True, 3),
    # XLA merged three collectives into one instruction, named (A:B:C); the idle ones move nothing that counts
    ("(stablehlo.all_reduce:psum:c0:stablehlo.all_reduce:psum:c1:idle:stablehlo.all_reduce:psum:c2)", False, 2),
    ("(stablehlo.all_reduce:psum:c0:idle:stablehlo.all_reduce:psum:c1:idle:stablehlo.all_reduce:psum:c2:idle)",
     True, 3),
])
def test_the_clean_workers_measurement_decides_which_collectives_are_idle(name, idle, operands):
    text = program("merged_psums").replace(MEASURED, f'op_name="jit(call)/call_exported/sdy.manual_computation:'
                                                     f'shard_map/{name}"')
    (merged,) = hlo.collectives(text)
    assert (merged.idle, merged.operands, merged.by_student, merged.origin) == (idle, operands, True, "psum")
    assert hlo.count(text, "all-reduce", by_student=True) == (0 if idle else 1)
    # a count of the needed ones says what else the program runs, so "runs 0" is not read as "runs none"
    assert hlo.idle_note(text, "all-reduce") == ("; the 1 more all-reduce it runs carries nothing the answer needs "
                                                 "(measured: the answer does not change without it, only tests it, "
                                                 "or stays the same with it taken from a run on other inputs), so "
                                                 "it is not counted"
                                                 if idle else "")


SCATTER = """HloModule m
%{name} (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] {root}
}}
ENTRY %main (x: f32[46]) -> f32[48] {{
  %x = f32[46]{{0}} parameter(0)
  %zero = f32[] constant(0)
  %zeros = f32[48]{{0}} broadcast(%zero), dimensions={{}}
  %at = s32[46,1]{{1,0}} iota(), iota_dimension=0
  ROOT %placed = f32[48]{{0}} scatter(%zeros, %at, %x), update_window_dims={{}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=%{name}
}}
"""


def test_a_scatter_counts_what_its_computation_does_with_each_update_and_input_free_values_count_nothing():
    placed = SCATTER.format(name="set", root="copy(%b)")  # x.at[:46].set: each update placed, no arithmetic
    added = SCATTER.format(name="add", root="add(%a, %b)")  # x.at[:46].add: one addition per update
    assert hlo.operations(placed) == 0
    assert hlo.operations(added) == 46
    # the zeros, the positions and a mask made of iotas, constants and the device's id are the same on every run
    mask = """HloModule m
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %id = u32[] partition-id()
  %four = u32[] constant(4)
  %first = u32[] multiply(%id, %four)
  %at = u32[8]{0} broadcast(%first), dimensions={}
  %i = u32[8]{0} iota(), iota_dimension=0
  %where = u32[8]{0} add(%at, %i)
  %f = f32[8]{0} convert(%where)
  ROOT %scaled = f32[8]{0} multiply(%x, %f)
}
"""
    assert hlo.operations(mask) == 8  # the product with x only: the offset and the positions compute on no input


def test_a_collective_moving_the_inputs_as_they_are_moves_nothing_computed():
    text = """HloModule m
ENTRY %main (x: f32[8]) -> (f32[4], f32[4]) {
  %x = f32[8]{0} parameter(0), sharding={replicated}
  %s = f32[4]{0} slice(%x), slice={[0:4]}
  %moved = f32[4]{0} collective-permute(%s), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %m = f32[4]{0} multiply(%s, %s)
  %sent = f32[4]{0} collective-permute(%m), channel_id=2, source_target_pairs={{0,1},{1,0}}
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%moved, %sent)
}
"""
    assert [(c.instruction, c.computed) for c in hlo.collectives(text)] == [("moved", False), ("sent", True)]
    # an input handed over in blocks is not held whole by every device: moving it is communication
    split = text.replace("sharding={replicated}", "sharding={devices=[2]<=[2]}")
    assert [(c.instruction, c.computed) for c in hlo.collectives(split)] == [("moved", True), ("sent", True)]


def test_an_all_to_all_of_partial_sums_sends_products_and_one_of_inputs_does_not():
    """Round 41: an all_to_all of x's own blocks (a gather by another name) passed as matmuls' reduce-scatter by
    hand; only one that passes on what a product computed is one."""
    summed, gathered = program("all_to_all_of_partial_sums"), program("all_to_all_of_inputs")
    assert hlo.select(summed, "all-to-all", by_student=True) and hlo.select(gathered, "all-to-all", by_student=True)
    assert hlo.sends_products(summed, "all-to-all")
    assert not hlo.sends_products(gathered, "all-to-all")
    assert not hlo.sends_products(summed, "all-gather")  # none of that kind: nothing is sent
    # round 42: what arrives is multiplied (a gather), or only added up (a reduce-scatter by hand)
    assert not hlo.sums_what_arrives(gathered, "all-to-all") and hlo.sums_what_arrives(summed, "all-to-all")


@pytest.mark.parametrize("name, summed", [
    ("all_to_all_of_inputs_in_a_branch", False),  # round 43: in a cond's branch, multiplied after the cond
    ("all_to_all_multiplied_by_exp_and_log", False),  # a product with no multiply
    ("all_to_all_summed_in_a_loop", True),  # a loop adds the blocks up; its counter indexes them, no part of a sum
    ("all_to_all_of_scaled_partial_sums", True),  # round 45: summed by an einsum with a vector of ones
    ("all_to_all_of_permuted_inputs_reduced_by_products", False),  # round 45: a reducer that multiplies, then adds
])
def test_what_an_all_to_all_brings_is_followed_through_branches_and_loops(name, summed):
    assert hlo.sums_what_arrives(program(name), "all-to-all") is summed


def test_what_an_all_to_all_sends_is_followed_back_through_scaling_not_through_a_permutation():
    """Round 45: partial sums scaled by 1/n before they are sent are still products; blocks of x multiplied by an
    anti-identity matrix (a dot with a constant operand) are x's blocks moved, no product."""
    assert hlo.sends_products(program("all_to_all_of_scaled_partial_sums"), "all-to-all")
    assert not hlo.sends_products(program("all_to_all_of_permuted_inputs_reduced_by_products"), "all-to-all")


def test_an_operand_after_xlas_index_comment_is_read_by_its_name():
    """XLA prints every fifth operand of a long list with a comment glued to it ("/*index=5*/%dot.26"); round 53's
    collective matmul that stacks eight products lost two of them, and two steps' overlap, to that comment."""
    text = ("HloModule m\n\nENTRY %main (p: f32[2]) -> (f32[2], f32[2], f32[2], f32[2], f32[2], f32[2]) {\n"
            "  %p = f32[2]{0} parameter(0)\n"
            "  ROOT %t = (f32[2], f32[2], f32[2], f32[2], f32[2], f32[2]) tuple(%p, %p, %p, %p, %p, /*index=5*/%p)\n}\n")
    comps, entry = hlo.parse_computations(text)
    assert comps[entry][-1].operands == ["p"] * 6


def test_a_collective_of_what_every_device_already_holds_moves_nothing_and_is_not_counted():
    """Read from the program (grader.suite.hlo_uniform): a value every device holds the same (an input handed over
    whole, a psum's result, what is computed from those alone) moved by a collective communicates nothing."""
    last = program("dot_read_from_the_last_device")  # out[-1]: XLA moves the last device's copy of the psum's result
    assert [(c.op, c.moves_nothing, c.idle) for c in hlo.collectives(last)] == [
        ("all-reduce", False, False), ("collective-permute", True, True), ("all-reduce", False, False)]
    assert hlo.count(last, "collective-permute") == 0
    assert structure.difference(structure.steps(last), structure.steps(program("dot_with_squeeze"))) is None
    whole = program("pmean_of_a_whole_answer")  # every device computes the whole dot, then averages the copies
    assert hlo.count(whole, "all-reduce", by_student=True) == 0
    assert hlo.idle_note(whole, "all-reduce") == ("; the 1 more all-reduce it runs moves only values every device "
                                                  "already holds (the same on all of them): it communicates nothing, "
                                                  "so it is not counted")
    for name in ("dot_with_squeeze", "ring_fori", "mesh_matmul", "scatter_columns", "gathered_and_summed"):
        assert not any(c.moves_nothing for c in hlo.collectives(program(name))), name  # each device's own block


BRANCH_ON_THE_DEVICE = '''HloModule m

%negated (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%a)
}

%copied (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %c = f32[4] copy(%a)
}

ENTRY %main (p: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %p = f32[4] parameter(0), sharding={replicated}
  %id = u32[] partition-id()
  %which = s32[] convert(%id)
  %fixed = s32[] constant(1)
  %chosen = f32[4] conditional(%which, %p, %p), branch_computations={%negated, %copied}
  %same = f32[4] conditional(%fixed, %p, %p), branch_computations={%negated, %copied}
  %sent = f32[4] collective-permute(%chosen), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %kept = f32[4] collective-permute(%same), channel_id=2, source_target_pairs={{0,1},{1,0}}
  %summed = f32[4] all-reduce(%chosen), channel_id=3, replica_groups={{0,1}}, to_apply=%copied
  %again = f32[4] collective-permute(%summed), channel_id=4, source_target_pairs={{0,1},{1,0}}
  ROOT %t = (f32[4], f32[4], f32[4]) tuple(%sent, %kept, %again)
}
'''


def test_what_a_branch_chosen_by_the_device_returns_differs_and_an_all_reduces_result_is_shared():
    """A branch picked by the device's id may return another value on each device; one picked alike everywhere,
    from values every device holds, returns the same; so does an all-reduce among all the devices."""
    moved = {c.instruction: c.moves_nothing for c in hlo.collectives(BRANCH_ON_THE_DEVICE)}
    assert moved == {"sent": False, "kept": True, "summed": False, "again": True}
