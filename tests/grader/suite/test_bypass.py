"""grader.suite.bypass: the mechanism a program used instead of the statement's, told from measured facts."""

from grader.suite import bypass, hlo
from grader.suite.bypass import Asks

# x (6, 4) arrives as P('data', 'model') on a 2 x 2 mesh; the program gathers it whole at its entry (op_name with
# no operation of the program's: XLA's reshard), then XLA's partitioner gathers w for a product (labelled).
GATHERED = '''HloModule m, entry_computation_layout={(f32[3,2]{1,0}, f32[2,10]{1,0})->f32[6,10]{1,0}}

ENTRY %main (param: f32[3,2], param.1: f32[2,10]) -> f32[6,10] {
  %param = f32[3,2]{1,0} parameter(0)
  %param.1 = f32[2,10]{1,0} parameter(1)
  %all-gather = f32[3,4]{1,0} all-gather(%param), channel_id=1, replica_groups={{0,1},{2,3}}, dimensions={1}, use_global_device_ids=true, metadata={op_name="jit(call)/call_exported"}
  %all-gather.1 = f32[6,4]{1,0} all-gather(%all-gather), channel_id=2, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(call)/call_exported"}
  %all-gather.2 = f32[4,10]{1,0} all-gather(%param.1), channel_id=3, replica_groups={{0,1},{2,3}}, dimensions={0}, use_global_device_ids=true, metadata={op_name="jit(call)/call_exported/stablehlo.dot_general:dot_general"}
  ROOT %dot = f32[6,10]{1,0} dot(%all-gather.1, %all-gather.2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
'''
ARRIVES = (["data", "model"], ["model", None])
SHAPES = [(6, 4), (4, 10)]


def test_no_per_device_computation_is_told_where_the_statement_asks_for_one():
    said = bypass.told("f", 4, False, GATHERED, Asks("jax.shard_map"))
    assert said.startswith("f: its program has no jax.shard_map that its answer depends on: on 4 devices")
    assert "another design" in said and "use " not in said  # no local fix
    assert bypass.told("f", 4, True, GATHERED, Asks("jax.shard_map")) is None  # it has one
    assert bypass.told("f", 1, False, GATHERED, Asks("jax.shard_map")) is None  # one device: the same program
    # What was measured is said: one held and not needed, or none held at all (nothing was replaced).
    assert "replaced by zeros" in said
    none = bypass.told("f", 4, False, GATHERED, Asks("jax.shard_map"), holds=False)
    assert "the compiled program holds no jax.shard_map over more than one device" in none
    assert "replaced by zeros" not in none and "an axis of 1" in none  # round 50: a pmap over one device is compiled away


def test_inputs_gathered_at_the_entry_are_named_and_a_gather_of_an_operation_is_not():
    said = bypass.told("f", 4, True, GATHERED, Asks(names=("x", "w")), ARRIVES, SHAPES)
    assert "every device gathers x (P('data', 'model') as it arrives) whole" in said, said
    assert "w (" not in said  # w's gather comes from the product (XLA's choice for an operation), not the entry
    assert "2 all-gathers added by XLA at the program's entry" in said


def test_inputs_are_only_checked_where_they_arrive_in_blocks_and_the_statement_names_them():
    assert bypass.told("f", 4, True, GATHERED, Asks(names=("x", "w"))) is None  # arriving whole
    assert bypass.told("f", 4, True, GATHERED, Asks(names=("x", "w")), [None, None], SHAPES) is None
    assert bypass.told("f", 4, True, GATHERED, Asks(), ARRIVES, SHAPES) is None  # a values test asks nothing
    idle = GATHERED.replace("ROOT %dot = f32[6,10]{1,0} dot(%all-gather.1, %all-gather.2)",
                            "ROOT %dot = f32[6,10]{1,0} dot(%param.1, %all-gather.2)")
    assert bypass.told("f", 4, True, idle, Asks(names=("x", "w")), ARRIVES, SHAPES) is None  # gathered, unused


# A pmap's psum of each device's partial dot, then its output summed outside it (XLA's partitioner all-reduces that
# sum): round 49's `.sum()` where `[0]` was meant.
SUMMED_AGAIN = '''HloModule m, entry_computation_layout={(f32[3]{0}, f32[3]{0})->f32[]}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (param: f32[3], param.1: f32[3]) -> f32[] {
  %param = f32[3]{0} parameter(0)
  %param.1 = f32[3]{0} parameter(1)
  %dot = f32[] dot(%param, %param.1), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %psum = f32[] all-reduce(%dot), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add, metadata={op_name="jit(call)/call_exported/sdy.manual_computation:pmap/stablehlo.all_reduce:psum"}
  %mine = f32[] add(%psum, %dot)
  ROOT %again = f32[] all-reduce(%mine), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add, metadata={op_name="jit(call)/call_exported/stablehlo.reduce:reduce_sum"}
}
'''


def test_a_reduction_left_to_xla_on_top_of_the_references_own_collectives_is_not_told_as_another_design():
    from grader.suite import structure
    own_psum = [s for s in structure.steps(SUMMED_AGAIN) if s.by_student]
    said = bypass.told("distributed_dot", 2, True, SUMMED_AGAIN, Asks("jax.pmap"), reference=lambda: own_psum)
    assert said.startswith("distributed_dot: on 2 devices, XLA's partitioner adds 1 all-reduce to finish a sum, mean "
                           "or maximum that your program computes outside its jax.pmap"), said
    assert "already runs the reference's all-reduce of its own" in said and "another design" not in said, said
    without = [s for s in structure.steps(SUMMED_AGAIN) if not s.by_student]
    alone = bypass.told("distributed_dot", 2, True, "\n".join(line for line in SUMMED_AGAIN.splitlines()
                                                                if "%psum = " not in line).replace("(%psum)", "(%dot)"),
                        Asks("jax.pmap"), reference=lambda: own_psum)
    assert alone.endswith("another design, not a detail to fix"), alone
    assert without and bypass.told("f", 2, True, SUMMED_AGAIN, Asks("jax.pmap"), reference=lambda: without) is None
    # what XLA adds up of the psum's result alone (its copy on every device, the same) moves nothing: not told
    copies = SUMMED_AGAIN.replace("%mine = f32[] add(%psum, %dot)", "%mine = f32[] multiply(%psum, %psum)")
    assert [c.idle for c in hlo.collectives(copies)] == [False, True]
    assert bypass.told("distributed_dot", 2, True, copies, Asks("jax.pmap"), reference=lambda: own_psum) is None
