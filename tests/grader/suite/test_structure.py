"""The first difference between a program's collectives and the reference's, each rule on real HLO.

The programs are in tests/grader/suite/data/make_hlo.py (4 emulated CPU devices; the 2 x 2 ones on a
('data', 'model') mesh); their HLO is committed under tests/grader/suite/data/hlo/.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from grader.grading.program_mode import Program
from grader.suite import feedback, structure

DATA = Path(__file__).parent / "data" / "hlo"
MESH = (("data", "model"), (2, 2))


def steps(name: str) -> list[structure.Step]:
    return structure.steps((DATA / f"{name}.txt").read_text())


def differ(student: str, reference: str, mesh=MESH) -> str | None:
    return structure.difference(steps(student), steps(reference), mesh)


def test_steps_read_kind_devices_dimension_rank_bytes_and_times():
    (scatter,) = steps("scatter_columns")
    assert (scatter.op, scatter.groups, scatter.dimensions, scatter.rank) == ("reduce-scatter", ((0, 1), (2, 3)), (1,), 2)
    assert (scatter.bytes, scatter.times, scatter.by_student, scatter.origin) == (8 * 4 * 4, 1, True, "psum_scatter")
    (untiled,) = steps("gather_untiled")
    assert (untiled.dimensions, untiled.rank) == ((0,), 3)  # all_gather without tiled=True adds a dimension
    (ring,) = steps("ring_fori")
    assert (ring.groups, ring.times) == (((0, 1), (1, 2), (2, 3), (3, 0)), 3)
    assert [s.origin for s in steps("dot_with_squeeze")] == ["psum", "squeeze"]  # XLA's own counts too
    assert not steps("dot_with_squeeze")[1].by_student


def test_collectives_the_answer_does_not_need_are_not_steps():
    assert steps("psum_of_a_constant") == []  # a psum of 0 for show: nothing to compare


def test_steps_survive_the_figure_file():
    found = steps("ring_backward") + steps("scatter_rows") + steps("dot_with_squeeze")
    assert structure.from_plain(json.loads(json.dumps(structure.plain(found)))) == found


def test_the_same_program_has_no_difference():
    for name in ("scatter_rows", "gather_over_data", "ring_fori", "dot_with_squeeze", "jit_contraction"):
        assert differ(name, name) is None, name


def test_a_kind_the_reference_does_not_run_comes_first():
    assert differ("jit_contraction", "mesh_matmul") == ("your program runs an all-gather over 'data'; the reference's "
                                                       "program runs no all-gather")


def test_a_kind_the_reference_runs_and_the_program_lacks():
    assert differ("mesh_matmul", "jit_contraction") == ("the reference's program runs an all-gather over 'data'; "
                                                       "yours runs no all-gather")
    assert differ("psum_of_a_constant", "ring_fori", None) == ("the reference's program runs a collective-permute; "
                                                               "yours runs no collective-permute")


def test_the_same_kind_over_another_mesh_axis():
    assert differ("gather_over_model", "gather_over_data") == ("your all-gather runs over 'model'; the reference's "
                                                              "runs over 'data'")


def test_the_same_kind_among_other_devices_without_a_mesh():
    assert differ("gather_over_model", "gather_over_data", None) == (
        "your all-gather runs among devices (0, 1) and (2, 3); the reference's runs among devices (0, 2) and (1, 3)")


def test_a_permute_that_sends_each_block_the_other_way():
    said = "your collective-permute sends device 0's data to device 3; the reference's sends it to device 1"
    assert differ("ring_backward", "ring_fori", None) == said
    assert differ("ring_backward", "ring_fori", (("i",), (4,))) == said  # the same axis, another direction


def test_the_same_kind_along_another_dimension():
    assert differ("scatter_rows", "scatter_columns") == ("your reduce-scatter over 'model' splits dimension 0; the "
                                                        "reference's splits dimension 1")


def test_several_of_one_kind_compare_in_any_order():
    (rows,), (columns,) = steps("scatter_rows"), steps("scatter_columns")  # as two_d scatters w1's and w2's gradients
    assert structure.difference([columns, rows], [rows, columns], MESH) is None
    said = "your reduce-scatter over 'model' splits dimension 0; the reference's splits dimension 1"
    assert structure.difference([rows, rows], [rows, columns], MESH) == said  # the second one along another
    assert structure.difference([rows, columns, columns], [rows, columns], MESH) == (
        "your program runs 3 reduce-scatters over 'model'; the reference's runs 2")


def test_a_gather_that_adds_a_dimension():
    assert differ("gather_untiled", "gather_over_data") == ("your all-gather over 'data' returns a block of 3 "
                                                           "dimensions on each device; the reference's of 2")


def test_how_many_times_it_runs():
    assert differ("nested_loops", "ring_fori", None) == ("your program runs 6 collective-permutes; the reference's "
                                                         "runs 3")


def test_a_loop_of_unknown_length_is_not_counted():
    assert differ("while_unknown", "ring_fori", None) is None  # the same ring; how often it runs is not known


def test_more_bytes_per_device_than_the_reference():
    (scatter,) = steps("scatter_rows")
    more = [dataclasses.replace(scatter, bytes=2 * scatter.bytes)]
    assert structure.difference(more, [scatter], MESH) == ("your reduce-scatters over 'model' move 256 bytes per "
                                                           "device; the reference's move 128")
    assert structure.difference([scatter], more, MESH) is None  # fewer bytes is no difference that matters


def test_beyond_the_reference_a_kind_it_never_runs_or_more_than_slack_times_its_bytes_in_one():
    (scatter,) = steps("scatter_rows")
    ring = steps("ring_fori")
    # a reduce-scatter beside the reference's collectives: a kind it never runs, whatever else matches
    assert structure.beyond(ring + [scatter], ring, 1.5, None) == (
        "your program runs a reduce-scatter among devices (0, 1) and (2, 3) (psum_scatter) where the reference's "
        "runs no reduce-scatter")
    # the kind the reference runs, its executions' bytes added up (a reduce-scatter of copies in two halves)
    part = dataclasses.replace(scatter, bytes=scatter.bytes * 3 // 4)
    assert structure.beyond([part, part], [scatter], 1.4, MESH) == (
        "your program's reduce-scatters over 'model' move 192 bytes per device, 1.5 times what the reference's "
        "reduce-scatters move (128), and the bound is 1.4 times that")
    assert structure.beyond([part, part], [scatter], 1.5, MESH) is None  # 192 bytes: within 1.5 times 128
    assert structure.beyond([scatter], [scatter], 1.5, MESH) is None
    # a kind the task accepts for another counts as that one
    exchange = dataclasses.replace(scatter, op="all-to-all", origin="all_to_all")
    assert structure.beyond([exchange], [scatter], 1.5, MESH, alike={"all-to-all": "reduce-scatter"}) is None
    assert "runs an all-to-all" in structure.beyond([exchange], [scatter], 1.5, MESH)
    # an unknown number of executions cannot be bounded
    looped = dataclasses.replace(scatter, times=None)
    assert "in a loop whose length is unknown" in structure.beyond([looped], [scatter], 1.5, MESH)


def _program(student: str, reference: str | None, mesh=MESH) -> Program:
    figures = None if reference is None else {"operations": 0, "collectives": structure.plain(steps(reference))}
    return Program(None, (DATA / f"{student}.txt").read_text(), True, figures and (lambda: figures), mesh)


def test_the_communication_block_lists_the_reference_and_the_difference():
    note = feedback.communication(_program("scatter_rows", "scatter_columns"), by_student=False)
    assert note["reference"] == ["1 reduce-scatter over 'model' (psum_scatter) of 128 bytes per device"]
    assert note["text"] == ["ran:        1 reduce-scatter over 'model' (psum_scatter) of 128 bytes per device",
                            "reference:  1 reduce-scatter over 'model' (psum_scatter) of 128 bytes per device",
                            "difference: your reduce-scatter over 'model' splits dimension 0; the reference's "
                            "splits dimension 1"]


def test_a_program_like_the_reference_is_said_once():
    note = feedback.communication(_program("dot_with_squeeze", "dot_with_squeeze", None), by_student=False)
    assert note["difference"] is None
    assert note["text"] == ["ran:    1 all-reduce (psum) of 4 bytes per device, 1 all-reduce (added by XLA for "
                            "squeeze) of 4 bytes per device, 8 bytes per device in all, as the reference's program does"]


def test_a_task_s_own_words_stay_beside_the_measured_listing():
    note = feedback.communication(_program("ring_backward", "ring_fori", None), needed="n - 1 shifts of the block")
    assert note["text"][-2:] == ["needed:     n - 1 shifts of the block",
                                 "difference: your collective-permute sends device 0's data to device 3; the "
                                 "reference's sends it to device 1"]


def test_a_program_without_a_reference_has_no_reference_lines():
    note = feedback.communication(_program("ring_fori", None), needed="3 collective-permutes")
    assert (note["reference"], note["difference"]) == (None, None)
    assert note["text"][-1] == "needed: 3 collective-permutes"


@pytest.mark.parametrize("hostile", [{"operations": 1}, {"operations": 1, "collectives": [{"op": "all-reduce"}]}])
def test_a_figure_file_without_readable_collectives_is_refused(hostile):
    with pytest.raises((KeyError, TypeError, ValueError)):
        Program(None, "", True, lambda: hostile).reference_collectives()


def test_a_listing_counts_in_words():
    """A ring's three permutes are "3 collective-permutes", one step "1 ... of 128 bytes"."""
    (ring,) = steps("ring_fori")
    (line,) = structure.listing([ring])
    assert line.startswith("3 collective-permutes ") and "of 1 byte " not in line
    (scatter,) = steps("scatter_columns")
    assert structure.listing([scatter], MESH)[0].startswith("1 reduce-scatter over 'model' ")


def test_the_same_all_reduce_combining_otherwise_is_a_difference():
    """pmean where the reference adds up (read from the program: a psum whose result it divides), pmax too."""
    (averaged,) = steps("pmean_only")
    assert averaged.origin == "pmean"
    added, largest = (dataclasses.replace(averaged, origin=o) for o in ("psum", "pmax"))
    said = structure.difference([averaged], [added])
    assert said == ("your program's all-reduce averages: its sum is divided afterwards (lax.pmean, or a psum then a "
                    "division); the reference's adds up (lax.psum)")
    assert structure.difference([largest], [added]).startswith("your program's all-reduce takes the maximum (lax.pmax)")
    assert structure.difference([added], [added]) is None
    squeezed = dataclasses.replace(averaged, origin="squeeze")  # what XLA added a collective for is no reduction
    assert structure.difference([squeezed], [added]) is None


def test_a_wrong_result_is_explained_only_by_the_collectives_it_depends_on():
    """Each collective knows which of the program's results can depend on it; a difference is looked for among
    those the wrong results depend on (a loss summed where the reference averages explains no wrong weights)."""
    summed, averaged = steps("gathered_and_summed"), steps("gathered_and_averaged")
    assert {s.op: s.outputs for s in summed} == {"all-gather": (0,), "all-reduce": (1,)}
    combining = "your program's all-reduce adds up (lax.psum); the reference's averages"
    assert structure.difference(summed, averaged).startswith(combining)
    assert structure.difference(summed, averaged, results=frozenset({1})).startswith(combining)
    assert structure.difference(summed, averaged, results=frozenset({0})) is None
    assert structure.difference(summed, averaged, results=frozenset({0, 1})).startswith(combining)
    told_before = [dataclasses.replace(s, outputs=None) for s in averaged]  # a figure kept before results were told:
    assert structure.difference(summed, told_before, results=frozenset({0})).startswith(combining)  # all compared
    assert structure.from_plain(structure.plain(summed)) == summed
