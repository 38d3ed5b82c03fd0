"""grader.suite.jax_errors on the real errors of JAX (tests/grader/suite/data/jax_errors.json, see make_jax_errors.py)."""

import json
import re
from pathlib import Path

import pytest

from grader.errors import StudentFailure
from grader.suite.jax_errors import RULES, Rule, Situation, explain, mistake

SAMPLES = json.loads((Path(__file__).parent / "data" / "jax_errors.json").read_text())
ERRORS = SAMPLES["errors"]

# sample -> (devices of the case, words the sentence must hold)
EXPECTED = {
    "ring_written_for_4_on_2_devices": (2, ("perm ((0, 1), (1, 2), (2, 3), (3, 0)) is written for 4 devices",
                                            "this ring has 2", "lax.axis_size(axis_name)")),
    "ring_that_sends_everything_to_device_0": (4, ("names a device twice", "send once and receive once")),
    "psum_over_the_wrong_mesh_axis": (4, ("out_specs P('data', None)", "differing along 'model'",
                                          "A collective over 'model'", "lax.pmean averages", "name 'model' in out_specs")),
    "w_not_placed_on_the_mesh": (4, ("laid out as P('model', None), but it arrives as P(None, None)", "Explicit",
                                     "jax.device_put(x, NamedSharding(mesh, P('model', None)))")),
    "rows_that_do_not_split_over_the_mesh": (4, ("array axis 0 has size 3", "over the 2 devices")),
    "np_sqrt_inside_pmap": (4, ("np.sqrt is a NumPy function", "use jnp.sqrt")),
    "float_inside_pmap": (4, ("float() needs a concrete number", "traced")),
    "if_on_a_traced_value": (4, ("an if", "jnp.where or lax.cond")),
    "reshape_without_padding": (4, ("37 elements do not split into 4 equal parts", "pad with zeros")),
    "leading_axis_one_too_many": (4, ("leading axis 5", "maps over 4 devices", "jax.device_count()")),
    "leading_axis_twice_the_devices": (4, ("leading axis 8, 2 rows per device", "maps over 4 devices")),
    "lr_mapped_by_pmap": (4, ("a scalar has no leading axis", "in_axes=(0, 0, None)")),
    "lr_mapped_by_a_pmap_with_an_axis_name": (4, ("a scalar was split over the devices of axis 'batch'",
                                                  "in_axes=(0, 0, None)")),
    "lr_mapped_by_a_pmap_inside_jit": (4, ("a scalar was split over the devices of axis 'batch'",
                                           "in_axes=(0, 0, None)")),
    "params_at_x": (4, ("contracts a dimension of 3 with one of 5", "the last axis of the left operand")),
    "psum_scatter_that_does_not_divide": (4, ("splits dimension 0 (scatter_dimension=0), of 3 entries, into 4 equal",
                                              "must name the dimension the result is split along")),
    "psum_over_an_unbound_axis_name": (4, ("axis name 'batch'", "use the axis_name you are given")),
    "mesh_larger_than_the_machine": (4, ("a mesh of shape (2, 4) needs 8 devices, more than the 4 there are",)),
    "batch_marked_static_where_lr_was_meant": (4, ("the argument at index 1 is marked static", "it is a tuple, which cannot be "
                                                   "hashed", "such as a learning rate")),
    "device_mesh_of_a_fixed_shape": (4, ("a mesh of shape (2, 1) holds 2 devices, and it must hold all 4 there are",
                                         "not from numbers of your own")),
    "all_gather_over_a_dimension_the_block_lacks": (4, ("lax.all_gather's axis=3", "has 2 dimensions")),
    "psum_scatter_over_a_dimension_the_block_lacks": (4, ("lax.psum_scatter's scatter_dimension=2",)),
    "pmap_in_axes_over_columns": (4, ("jax.pmap's in_axes=(0, 1)", "its axis 1, of size 3", "4 devices")),
    "psum_over_an_axis_the_mesh_lacks": (4, ("lax.psum with axis_name='i'", "a collective takes only those names")),
    "psum_scatter_without_tiled": (4, ("lax.psum_scatter without tiled=True", "scatter_dimension=1", "tiled=True each "
                                       "device gets a block")),
    "out_spec_of_a_tuple_replicated": (4, ("out_specs P()", "along mesh axis 'data'")),
    "global_shape_of_the_local_rows": (4, ("global_shape=(2, 4)", "local_data here is (4, 4)")),
    "ring_over_every_device_on_a_mesh_axis": (4, ("written for 4 devices", "the axis it runs over has fewer",
                                                  "lax.axis_size(axis_name)", "never from jax.device_count()")),
    "spec_without_a_mesh_as_out_shardings": (4, ("bare PartitionSpec", "NamedSharding(mesh, P(...))")),
    "spec_without_a_mesh_to_device_put": (4, ("bare PartitionSpec", "NamedSharding(mesh, P(...))")),
    "out_shardings_that_do_not_divide": (4, ("array axis 0 has size 3", "entry 0 of its PartitionSpec P('model', 'data')",
                                             "an entry naming another mesh axis")),
    "matmul_of_rows_and_columns_split_over_one_axis": (4, ("the same mesh axis ('model')", "jax.sharding.reshard",
                                                           "jax.shard_map")),
    "explicit_matmul_without_out_sharding": (4, ("Explicit axes", "split over mesh axis 'model'", "out_sharding=")),
    "loop_carry_of_zeros_set_per_device": (4, ("carry starts the same on every device", "differ along 'data' and 'model'",
                                               "set your own block before the loop")),
    "indexing_an_explicit_array": (4, ("index a NumPy copy (np.asarray(y)[...])",)),
    "axis_not_in_the_mesh": (4, ("P('batch', None) names the axis 'batch'", "('data', 'model') does not have")),
    "one_axis_for_two_dimensions": (4, ("P('model', 'model') splits two dimensions over the same mesh axis 'model'",)),
    "spec_longer_than_the_array": (4, ("P('data', 'model', None) has entries for 3 dimensions", "the array has 2")),
    "gradient_of_a_vector": (4, ("returns one number", "shape (3,)", "jnp.mean")),
    "matmul_of_two_sharded_arrays_outside_shard_map": (4, ("split over mesh axis 'model' in both operands",
                                                           "inside jax.shard_map", "lax.psum over 'model'")),
    "add_of_arrays_sharded_differently": (4, ("add of two arrays laid out differently", "('model', 'data')")),
    "in_specs_naming_an_axis_the_mesh_lacks": (4, ("in_specs[0] names mesh axis 'rows'", "'data' and 'model'")),
    "out_specs_longer_than_the_result": (4, ("out_specs is P('data', None, None), 3 entries for the function's result",
                                             "rank 2")),
    "one_spec_for_two_arguments": (4, ("argument 'b' (float32[4,3]) the spec P('data', 'model')", "one spec per argument")),
    "range_over_the_device_index": (4, ("used as a Python integer", "lax.axis_size(axis_name) is a Python int")),
    "slice_up_to_the_device_index": (4, ("a slice whose bound is traced",)),
    "int_blocks_added_up_in_a_float_carry": (4, ("carry goes in as int32[3] but the loop body returns float32[3]",
                                                 "must return int32[3] again")),
    "padding_to_a_shorter_length": (4, ("negative pad width", "(-L) % n")),
    "set_mesh_inside_the_function": (4, ("jax.set_mesh is refused inside jax.jit", "NamedSharding(mesh, spec)",
                                         "mesh=mesh to jax.shard_map")),
}

# Words a rule of the grader's own may never say: they belong to one task, and are wrong advice in another.
TASK_WORDS = ("params", "x @", "choose shapes")


def test_every_sample_has_an_expectation():
    assert set(EXPECTED) == set(ERRORS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_jax_error_becomes_the_mistake_behind_it(name):
    devices, words = EXPECTED[name]
    sample = ERRORS[name]
    said = mistake(sample["text"], sample["exc_type"], Situation(devices, sample["line"]))
    assert said, f"no rule knows {name}: {sample['text'][:200]}"
    missing = [w for w in words if w not in said]
    assert not missing, f"{name}: {said!r} does not say {missing}"
    assert "_internal_pmap_axis_name" not in said and "jax/_src" not in said
    assert not [w for w in TASK_WORDS if w in said], f"{name}: {said!r} gives one task's advice"


def test_every_rule_is_used_by_a_sample():
    used = {rule.name for rule in RULES for s in ERRORS.values() if rule.pattern.search(s["text"])}
    assert used == {rule.name for rule in RULES}


def test_the_numpy_function_comes_from_the_students_line():
    text = ERRORS["np_sqrt_inside_pmap"]["text"]
    assert "use jnp.mean" in mistake(text, situation=Situation(4, "return (x - np.mean(x)) / s"))
    assert "jnp.sqrt for np.sqrt" in mistake(text, situation=Situation(4, ""))


def test_a_squeeze_error_is_not_blamed_on_pmap_without_a_device_count():
    text = ERRORS["leading_axis_twice_the_devices"]["text"]
    assert mistake(text, "ValueError", Situation(None)) is None


def test_a_ring_of_the_right_size_with_a_repeated_device_is_called_that():
    text = ERRORS["ring_that_sends_everything_to_device_0"]["text"]
    assert "names a device twice" in mistake(text, situation=Situation(4))


def test_an_unknown_error_has_no_mistake():
    assert mistake("division by zero", "ZeroDivisionError", Situation(4)) is None


def test_a_suites_own_rule_comes_first_and_may_require_a_type():
    own = Rule("fixed count", re.compile(r"written for (\d+)"), lambda m, s: "a suite's sentence",
               exc_types=("ValueError",))
    text = "perm written for 4 devices; ppermute sources and destinations must be unique, got ((0, 1), (1, 0))."
    assert mistake(text, "ValueError", Situation(2), rules=(own, *RULES)) == "a suite's sentence"
    assert mistake(text, "TypeError", Situation(2), rules=(own, *RULES)).startswith("lax.ppermute's perm")


def _failure(sample: str, message_head: str) -> StudentFailure:
    s = ERRORS[sample]
    one_line = " ".join(s["text"].split())[:300]
    return StudentFailure("raised", f"{message_head} raised {s['exc_type']}: {one_line}", "ring.py:9", s["exc_type"],
                          "jax", s["text"], s["line"])


def test_explain_keeps_what_was_called_and_replaces_jaxs_text():
    said = explain(_failure("ring_written_for_4_on_2_devices", "ring_shift"), devices=2)
    assert said.startswith("ring_shift raised ValueError: lax.ppermute's perm ((0, 1), (1, 2), (2, 3), (3, 0)) is "
                           "written for 4 devices, but this ring has 2")


def test_explain_reads_the_full_text_past_the_one_line_message():
    failure = _failure("psum_over_the_wrong_mesh_axis", "process 0 of 2: sharded_matmul")
    assert "mesh axis 'model'" not in failure.message  # cut off in the one-line message
    assert explain(failure, devices=4).startswith("process 0 of 2: sharded_matmul raised ValueError: shard_map's "
                                                  "out_specs P('data', None)")


def test_explain_leaves_an_unknown_error_alone():
    assert explain(StudentFailure("raised", "f() raised KeyError: 'x'", exc_type="KeyError", detail="'x'")) is None


def test_a_carry_that_varies_along_one_axis_is_told_too():
    text = ERRORS["loop_carry_of_zeros_set_per_device"]["text"].replace("{V:(data,model)}", "{V:model}")
    said = mistake(text, "TypeError", Situation(4))
    assert "differ along 'model' (" in said and "pcast(init, ('model',)" in said


def test_a_carry_of_two_dimensions_is_named_whole():
    text = ERRORS["int_blocks_added_up_in_a_float_carry"]["text"].replace("int32[3]", "int32[2,3]").replace(
        "float32[3]", "float32[2,3]")
    said = mistake(text, "TypeError", Situation(4))
    assert "carry goes in as int32[2,3] but the loop body returns float32[2,3]" in said


def test_numpy_on_the_functions_own_inputs_is_told_as_computing_on_the_host():
    text = ("The numpy.ndarray conversion method __array__() was called on traced array with shape float32[37]\n"
            "The error occurred while tracing the function distributed_dot at /tmp/s/dot.py:5 for jit. This concrete "
            "value was not available in Python because it depends on the value of the argument x.")
    said = mistake(text, situation=Situation(4, "total = np.dot(np.asarray(x), np.asarray(y))"))
    assert said.startswith("np.dot runs on the function's inputs outside any jax.pmap or shard_map"), said
    assert "use jnp.dot" not in said  # a local fix for a design that computes on the host is wrong advice
    inside = ERRORS["np_sqrt_inside_pmap"]["text"]  # traced for shard_map (a pmap): the local fix is the right one
    assert "use jnp.sqrt" in mistake(inside, situation=Situation(4, "return x / np.sqrt(v)"))


def test_a_reshape_whose_parts_are_miscounted_is_not_told_to_pad():
    """The array splits into the parts already (padded too far, or a per-part length computed wrong): no pad advice."""
    say = lambda size, shape, devices=2: mistake(  # noqa: E731
        f"cannot reshape array of shape ({size},) (size {size}) into shape ({shape})", "TypeError", Situation(devices))
    told = say(16, "2, 3, 2")
    assert told.startswith("an array of 16 elements cannot be reshaped to (2, 3, 2): it does split into 2 equal parts, "
                           "of 8 elements each, but the shape gives each part 6") and "pad" not in told
    assert say(15, "2, 4, 2").endswith("must hold exactly as many; pad to a multiple of 2 first")  # 15 in 2 parts
    # pad advice only where the parts are the devices: 3 parts on 2 devices is some other count gone wrong
    assert say(14, "3, 4, 2").endswith("must hold exactly as many")
    # round 48: x.shape[0] // jax.device_count() in a ring shorter than the machine: padding would not help
    zero = say(4, "2, 0, 2, 2")
    assert "has an axis of length 0" in zero and "lax.axis_size(axis_name), not jax.device_count()" in zero
    assert "pad" not in zero, zero


def test_an_untiled_psum_scatter_is_told_from_jaxs_words_where_the_call_spans_lines():
    """"must match shard count" is said only of a psum_scatter without tiled=True: a call whose arguments go on
    past the line that raised is told all the same, without the dimension the line does not show."""
    text = "reduce_scatter operand scatter dimension size 3 must match shard count 2"
    told = mistake(text, "ValueError", Situation(2, "return jax.shard_map(lambda a, b: lax.psum_scatter(a @ b,"))
    assert told.startswith("lax.psum_scatter without tiled=True gives each device one slice of scatter_dimension, ")
    assert mistake(text, "ValueError", Situation(2, 'lax.psum_scatter(v, "i", tiled=True)')) is None


LAID_OUT = ("your shard_map's in_specs entry for its input 1, of shape (8, 4), is P() (whole on every device); the "
            "reference's is P('model') (rows split over 'model')")


def test_a_measured_layout_difference_replaces_the_advice_that_guesses_which_side_is_wrong():
    """JAX says a declared layout and the one an input arrives in differ; the reference's trace says which one is
    the student's mistake, so the advice to move the input to the declared layout is not given."""
    failure = _failure("w_not_placed_on_the_mesh", "sharded_matmul")
    failure.measured = LAID_OUT
    said = explain(failure, devices=4)
    assert "laid out as P('model', None), but it arrives as P(None, None)" in said
    assert "jax.device_put" not in said and said.endswith(f"Compared with the reference solution: {LAID_OUT}")
    failure = _failure("rows_that_do_not_split_over_the_mesh", "no_collective")
    failure.measured = LAID_OUT
    said = explain(failure, devices=4)
    assert "array axis 0 has size 3" in said and "Compare the PartitionSpec" not in said and LAID_OUT in said


def test_an_error_no_rule_knows_is_told_with_a_measured_difference():
    failure = StudentFailure("raised", "f() raised TypeError: some words of JAX", "f.py:3", "TypeError", "jax",
                             "some words of JAX about a type", "y = f(x)")
    assert explain(failure) is None
    failure.measured = LAID_OUT
    assert explain(failure) == f"f() raised TypeError: JAX refused it (some words of JAX about a type). Compared with " \
                               f"the reference solution: {LAID_OUT}"


def test_a_psum_scatter_of_a_dimension_that_does_not_divide_is_not_told_to_pad_it_only():
    """Round 36: fsdp's gradient scattered along its columns (3), where w is split by rows. Padding would make the
    call run and leave the gradient split the wrong way: the message names the dimension and both fixes."""
    text = "tiled reduce_scatter operand scatter dimension size 3 must be divisible by shard_count 2"
    told = mistake(text, "ValueError", Situation(2, 'grad = lax.psum_scatter(grad, "data", scatter_dimension=1, '
                                                    'tiled=True)'))
    assert told.startswith("lax.psum_scatter splits dimension 1 (scatter_dimension=1), of 3 entries, into 2 equal")
    assert "must name the dimension the result is split along; if that is this one, pad it" in told
