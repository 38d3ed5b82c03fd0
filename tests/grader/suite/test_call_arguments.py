"""grader.suite.call_arguments, and the jax_errors rules that name the argument a student wrote."""

from grader.errors import StudentFailure
from grader.suite.call_arguments import argument, calls
from grader.suite.jax_errors import Situation, empty_assertion_on, explain, mistake


def test_arguments_by_jax_s_parameter_names_positional_or_keyword():
    line = 'return lax.all_gather(xb, "model", axis=3, tiled=True) @ wb'
    assert argument(line, "all_gather", "axis") == "3"
    assert argument(line, "all_gather", "axis_name") == "'model'"
    assert argument('y = lax.psum(x, "i")', "psum", "axis_name") == "'i'"
    assert argument("out = jax.pmap(f, in_axes=(0, 1))(a, b)", "pmap", "in_axes") == "(0, 1)"
    assert argument("return jax.shard_map(block, mesh=mesh, in_specs=(P('data'),),", "shard_map", "in_specs") \
        == "(P('data'),)"  # a call continued on the next line


def test_nothing_read_from_a_line_that_is_not_a_call():
    assert calls("") == [] and calls("for i in range(") == [] and calls("x = 1 +") == []
    assert argument("lax.psum(x)", "psum", "axis_name") is None


def test_an_all_gather_axis_past_the_blocks_dimensions_is_named():
    said = mistake("axis 3 is out of bounds for array of dimension 2", "ValueError",
                   Situation(4, 'return lax.all_gather(xb, "model", axis=3, tiled=True) @ wb', "jax"))
    assert said.startswith("lax.all_gather's axis=3 names a dimension the block does not have: each device's block "
                           "has 2 dimensions"), said
    # the same text from another call: the argument is not claimed
    assert mistake("axis 3 is out of bounds for array of dimension 2", "ValueError",
                   Situation(4, "return jnp.sum(x, axis=3)", "jax")) is None


def test_a_scatter_dimension_the_block_lacks():
    said = mistake("tuple index out of range", "IndexError",
                   Situation(4, 'y = lax.psum_scatter(x, "model", scatter_dimension=2, tiled=True)', "jax"))
    assert "lax.psum_scatter's scatter_dimension=2" in said
    assert mistake("tuple index out of range", "IndexError", Situation(4, "y = x[5]", "submission")) is None


def test_pmap_in_axes_on_an_axis_that_is_not_the_device_count():
    text = ("Sharding NamedSharding(mesh=Mesh('_internal_pmap_axis_name': 4, axis_types=(Auto,)), spec=P(None, "
            "'_internal_pmap_axis_name'), memory_kind=device) implies that array axis 1 is partitioned 4 times, but "
            "the dimension size is 3 (full shape: (4, 3))")
    said = mistake(text, "IndivisibleError", Situation(4, "return jax.pmap(f, in_axes=(0, 1))(a, b)", "jax"))
    assert said.startswith("jax.pmap's in_axes=(0, 1) maps an argument over its axis 1, of size 3, but there are 4 "
                           "devices"), said


def test_the_out_spec_of_a_tuple_is_named_by_its_index():
    text = ("out_specs is P('data',) which implies that the corresponding output value is replicated across mesh "
            "axis 'model', but could not infer replication over any axes")
    line = 'return jax.shard_map(f, mesh=mesh, in_specs=P("data", "model"), out_specs=(P("data", "model"), P("data")))(x)'
    assert mistake(text, "ValueError", Situation(4, line, "jax")).startswith("shard_map's out_specs[1] P('data',) says")
    assert mistake(text, "ValueError", Situation(4, "", "jax")).startswith("shard_map's out_specs P('data',) says")


def test_an_assertion_with_no_message_never_ends_empty():
    failure = StudentFailure("raised", 'f() raised AssertionError at `return lax.psum(x, "i")` with no message (JAX '
                             "gave no reason: the arguments of this line's JAX call are where to look)",
                             exc_type="AssertionError", raised_in="jax", detail="", line='return lax.psum(x, "i")')
    said = explain(failure, 4)
    assert said == ('f() raised AssertionError at `return lax.psum(x, "i")`: lax.psum with axis_name=\'i\' failed '
                    "inside JAX with no message of its own, as it does when that name is not an axis of the mesh the "
                    "shard_map runs on (nor the axis_name of the pmap around it): a collective takes only those "
                    "names"), said
    mine = StudentFailure("raised", "f() raised AssertionError at `assert x.ndim == 2` with no message",
                          exc_type="AssertionError", raised_in="submission", detail="", line="assert x.ndim == 2")
    assert explain(mine, 4) is None  # the student's own assert: its message already says where


def test_an_assertion_with_no_message_compares_the_axis_name_with_the_mesh_a_suite_knows():
    rules = (empty_assertion_on(("data", "model")),)

    def said(line):
        failure = StudentFailure("raised", f"f() raised AssertionError at `{line}` with no message",
                                 exc_type="AssertionError", raised_in="jax", detail="", line=line)
        return explain(failure, 4, rules)
    assert said('return lax.psum(x, "i")').endswith("lax.psum with axis_name='i' failed inside JAX with no message "
                                                   "of its own: the mesh's axes are 'data' and 'model', and 'i' is "
                                                   "none of them: name an axis the mesh has")
    inside = said("return lax.psum(x, 'model')")  # a name the mesh has: no fix claimed, only where names hold
    assert "'model' is an axis of the mesh ('data' and 'model')" in inside and "name an axis" not in inside, inside
    unknown = said("return lax.psum(x, axis)")  # a variable: its value is not known here
    assert "as it does when that name is not an axis" in unknown and "'data'" not in unknown, unknown


def test_global_shape_of_the_local_rows():
    text = ("When calling `make_array_from_process_local_data` on a single process, global_shape should be None or "
            "equal to local_data.shape.Got global_shape=(2, 4) and local_data.shape=(4, 4).")
    assert mistake(text, "ValueError").startswith("jax.make_array_from_process_local_data's global_shape=(2, 4)")


def test_global_shape_that_the_devices_cannot_split():
    text = ("Sharding NamedSharding(mesh=Mesh('batch': 4, axis_types=(Auto,)), spec=P('batch',), memory_kind=device) "
            "implies that array axis 0 is partitioned 4 times, but the dimension size is 2 (full shape: (2, 3))")
    line = "arr = jax.make_array_from_process_local_data(sharding, local_batch, local_batch.shape)"
    said = mistake(text, "IndivisibleError", Situation(2, line, "jax"))
    assert said.startswith("jax.make_array_from_process_local_data's global_shape=local_batch.shape gives axis 0 a "
                           "size of 2"), said
    # Another call that does not divide is no global_shape's: it is told by its PartitionSpec's entry.
    assert mistake(text, "IndivisibleError", Situation(2, "y = jax.device_put(x, s)", "jax")).startswith(
        "array axis 0 has size 2, which does not split evenly over the 4 devices entry 0 of its PartitionSpec "
        "P('batch',)")


def test_an_out_spec_jax_numbers_itself_keeps_its_number():
    text = ("out_specs[0] is P() which implies that the corresponding output value is replicated across mesh axis "
            "'data', but could not infer replication over any axes")
    assert mistake(text, "ValueError", Situation(4, "return step(w, x, y)", "jax")).startswith("shard_map's out_specs[0] P()")
