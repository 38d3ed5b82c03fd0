"""How a function's per-device computations lay out inputs and results against the reference's
(grader.suite.mapped): the spec argument itself, read from the two traces."""

from __future__ import annotations

from grader.suite import mapped, traced


def one(kind="shard_map", mesh=("data", "model"), ins=(), outs=()):
    return {"kind": kind, "mesh": list(mesh), "in": [[spec, list(shape)] for spec, shape in ins], "out": list(outs)}


def trace(*maps, complete=True):
    return {"collectives": [], "complete": complete, "maps": list(maps)}


ROWS = [["data"], None]
TP = trace(one(ins=[(ROWS, (6, 3)), (ROWS, (6, 3))], outs=[ROWS]))


def test_an_input_split_otherwise_is_said_with_its_argument_and_layouts():
    mine = trace(one(ins=[(ROWS, (6, 3)), ([], (6, 3))], outs=[ROWS]))
    assert mapped.difference(mine, TP) == (
        "your shard_map's in_specs entry for its input 1, of shape (6, 3), is P() (whole on every device); the "
        "reference's is P('data') (rows split over 'data')")


def test_a_result_joined_otherwise_is_said_after_the_inputs():
    mine = trace(one(ins=[(ROWS, (6, 3)), (ROWS, (6, 3))], outs=[[]]))
    assert mapped.difference(mine, TP) == (
        "your shard_map's out_specs entry for its result 0 is P() (one device's result taken as the whole, as if "
        "every device held the same); the reference's is P('data') (the devices' blocks joined along axis 0 over "
        "'data')")
    both = trace(one(ins=[(ROWS, (6, 3)), (ROWS, (6, 3))], outs=[[["data", "model"]]]))
    assert "is P(('data', 'model'),) (the devices' blocks joined along axis 0 over 'data' and 'model')" in \
        mapped.difference(both, TP)


def test_a_pmap_is_told_in_in_axes_whatever_its_axis_is_called():
    theirs = trace(one("pmap", ["i"], ins=[([["i"]], (2, 3, 5)), ([["i"]], (2, 5, 2))], outs=[[["i"]]]))
    mine = trace(one("pmap", ["devices"], ins=[([["devices"]], (2, 3, 5)), ([], (2, 5, 2))], outs=[[["devices"]]]))
    assert mapped.difference(mine, theirs) == (
        "your jax.pmap's in_axes entry for its input 1, of shape (2, 5, 2), is None (whole on every device); the "
        "reference's is 0 (axis 0 split over the devices)")
    renamed_only = trace(one("pmap", ["devices"], ins=[([["devices"]], (2, 3, 5)), ([["devices"]], (2, 5, 2))],
                             outs=[[["devices"]]]))
    assert mapped.difference(renamed_only, theirs) is None  # the axis name is the student's to choose


def test_an_input_handed_over_in_another_shape_is_said_first():
    theirs = trace(one("pmap", ["i"], ins=[([["i"]], (2, 3)), ([["i"]], (2, 3))], outs=[[["i"]]]))
    mine = trace(one("pmap", ["i"], ins=[([["i"]], (3, 2)), ([["i"]], (3, 2))]), complete=False)
    assert mapped.difference(mine, theirs) == ("your jax.pmap is handed its input 0 in shape (3, 2); the reference's "
                                               "in shape (2, 3) (the same axes in the other order)")


def test_a_jit_refused_before_its_inputs_are_read_is_compared_on_its_results():
    theirs = trace(one("jit", ins=[(None, (6, 4)), (None, (4, 6))], outs=[[["data"], ["model"]]]))
    mine = trace(one("jit", outs=[[["data", "model"], None]]), complete=False)
    assert mapped.difference(mine, theirs) == (
        "your jax.jit's out_shardings entry for its result 0 is P(('data', 'model'),) (axis 0 split over 'data' and "
        "'model'); the reference's is P('data', 'model') (rows split over 'data'; columns split over 'model')")
    unspecified = trace(one("jit", ins=[(None, (6, 4)), (None, (4, 6))], outs=[None]))
    assert "is not given (laid out as the compiler chooses)" in mapped.difference(unspecified, theirs)


def test_nothing_is_said_where_there_is_no_pair_to_compare():
    assert mapped.difference(TP, TP) is None
    assert mapped.difference(trace(), TP) is None  # no computation read
    assert mapped.difference(trace(one(mesh=("x", "y"), ins=[([["x"]], (6, 3))] * 2, outs=[[["x"]]])), TP) is None
    two = trace(*TP["maps"], *TP["maps"])
    assert mapped.difference(two, TP) is None  # a whole trace with another number of computations
    jit = trace(one("jit", ins=[(ROWS, (6, 3)), ([], (6, 3))], outs=[ROWS]))
    assert mapped.difference(jit, TP) is None  # jit where the reference maps per device: not one to compare
    # a trace that failed after its first computation is compared on what it asked for
    failed = trace(one(ins=[(ROWS, (6, 3)), ([], (6, 3))], outs=[ROWS]), complete=False)
    assert "input 1" in mapped.difference(failed, two)


def test_a_trace_not_of_its_form_says_nothing():
    good = one(ins=[(ROWS, (6, 3)), ([], (6, 3))], outs=[ROWS])
    for hostile in ({**good, "kind": "os.system"}, {**good, "mesh": ["\x1b[2Jdata", "model"]},
                    {**good, "in": [[[["da ta"]], [6, 3]]]}, {**good, "in": [[ROWS, [-1, 3]]]},
                    {**good, "out": [[["data"]] * 9]}, {**good, "in": "P('data')"}, "shard_map"):
        assert mapped.difference(trace(hostile), TP) is None, hostile
    assert mapped.difference(trace(*[good] * 17), trace(*[TP["maps"][0]] * 17)) is None


def test_the_layout_difference_comes_before_the_collectives_in_a_traced_difference():
    mine = {**trace(one(ins=[(ROWS, (6, 3)), ([], (6, 3))], outs=[ROWS])),
            "collectives": [["all_gather", ["data"], 0, [6, 3]]]}
    assert traced.difference(mine, TP).startswith("your shard_map's in_specs entry for its input 1")


def test_an_extra_input_handed_whole_where_the_reference_splits_one_of_its_shape_is_said():
    """x handed twice, once split and once whole (P()), beside w: every device holds all of x."""
    theirs = trace(one(ins=[([["model"]], (4, 5)), ([[], ["model"]], (5, 6))], outs=[[[], ["model"]]]))
    mine = trace(one(ins=[([["model"]], (4, 5)), ([], (4, 5)), ([[], ["model"]], (5, 6))], outs=[[[], ["model"]]]))
    assert mapped.difference(mine, theirs) == (
        "your shard_map is handed 3 inputs, the reference's 2: your input 1, of shape (4, 5), is whole on every "
        "device (in_specs entry P()), where the reference's computation gets an input of that shape split "
        "(P('model'))")
    fewer = trace(one(ins=[([["model"]], (4, 5))], outs=[[[], ["model"]]]))
    assert mapped.difference(fewer, theirs) is None  # fewer inputs: no pair to compare
