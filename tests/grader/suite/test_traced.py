"""How a refused program's collectives differ from the reference's, from the two traces (grader.suite.traced)."""

from __future__ import annotations

from grader.suite import jax_errors, traced


def trace(*collectives, complete=True):
    return {"collectives": [list(c) for c in collectives], "complete": complete}


PSUM = ("psum", ["model"], None, [4, 6])
TP = trace(PSUM)
GATHER = ("all_gather", ["data"], 0, [8, 3])
FSDP = trace(GATHER, ("psum_scatter", ["data"], 0, [2, 3]), ("pmean", ["data"], None, []))


def test_a_collective_over_other_axes_is_said_first():
    assert traced.difference(trace(("psum", ["data"], None, [4, 6])), TP) == (
        "your function's lax.psum runs over 'data'; the reference's runs over 'model'")


def test_a_reduction_combining_otherwise_over_the_same_axes():
    assert traced.difference(trace(("pmean", ["model"], None, [4, 6])), TP) == (
        "your function averages with lax.pmean over 'model'; the reference's adds up (lax.psum)")


def test_a_gather_along_another_axis_is_told_from_a_trace_that_failed_after_it():
    """The product after a gather along the wrong axis fails: what the trace asked for before is compared."""
    failed = trace(("all_gather", ["data"], 1, [2, 12]), complete=False)
    assert traced.difference(failed, FSDP) == ("your lax.all_gather over 'data' gathers along axis 1 and returns "
                                               "(2, 12) on each device; the reference's gathers along axis 0 and "
                                               "returns (8, 3) on each device")
    assert traced.difference(trace(GATHER, complete=False), FSDP) is None  # no collective is missing from a prefix


def test_a_gather_without_tiled_is_told_by_the_axis_its_blocks_are_stacked_in():
    """Round 36: an all_gather without tiled=True returns (devices, block) where the reference's joins the blocks.
    Only where the shapes prove it: the same dimension, that axis split in two."""
    untiled = trace(("all_gather", ["data"], 0, [4, 2, 3]), complete=False)
    assert traced.difference(untiled, FSDP) == ("your lax.all_gather over 'data' stacks the blocks in a new axis 0 and "
                                                "returns (4, 2, 3) on each device; the reference's joins them along "
                                                "axis 0 and returns (8, 3) (tiled=True)")
    other = trace(("all_gather", ["data"], 0, [4, 3, 3]), complete=False)  # 4 x 3 is not 8: not the untiled form
    assert "stacks" not in traced.difference(other, FSDP)


def test_one_missing_and_one_too_many_are_both_said():
    mine = trace(GATHER, GATHER, GATHER, ("psum_scatter", ["data"], 0, [2, 3]))
    assert traced.difference(mine, FSDP) == ("the reference's function runs lax.pmean over 'data' once, yours never; "
                                             "your function runs lax.all_gather over 'data' 3 times, the reference's "
                                             "once")
    assert traced.difference(trace(), TP) == "the reference's function runs lax.psum over 'model' once, yours never"
    # a jax.jit program that asks for no collective and no per-device computation: XLA adds its collectives,
    # which no trace shows, so nothing is said of them
    jitted = {**trace(), "maps": [{"kind": "jit", "mesh": ["data", "model"], "in": [], "out": []}]}
    assert traced.difference(jitted, TP) is None


def test_the_same_collectives_or_a_trace_not_of_its_form_say_nothing():
    assert traced.difference(FSDP, FSDP) is None
    for hostile in (trace(("psum", "model", None, [4])), trace(("os.system", ["model"], None, [4])),
                    trace(("psum", ["x" * 41], None, [4])), "psum", {"collectives": [], "complete": "yes"},
                    trace(*[PSUM] * 65), trace(("psum", [3], None, [4])), trace(("all_gather", ["a"], -1, [4])),
                    trace(("psum", ["a"], None, [2 ** 41])), trace(("psum", ["\x1b[2Jdata"], None, [4]))):
        assert traced.difference(hostile, TP) is None, hostile
    assert traced.difference(TP, trace(PSUM, complete=False)) is None  # the reference's trace must be whole


def test_a_replication_error_with_a_measured_difference_drops_the_list_of_guesses():
    text = ("shard_map applied to the function 'f' was given out_specs which require replication which can't be "
            "statically inferred given the mesh:\n\nThe mesh given has shape (2, 2) with corresponding axis names "
            "('data', 'model').\n\nout_specs is P('data', None) which implies that the corresponding output value is "
            "replicated across mesh axis 'model', but could not infer replication over any axes")
    measured = traced.difference(trace(("psum", ["data"], None, [4, 6])), TP)
    guessed = jax_errors.mistake(text, "ValueError")
    told = jax_errors.mistake(text, "ValueError", jax_errors.Situation(measured=measured))
    assert "lax.pmean averages them" in guessed and "lax.pmean averages them" not in told
    assert told.endswith("Traced again without that check, your function's lax.psum runs over 'data'; the "
                         "reference's runs over 'model'")


def test_the_reference_s_own_collectives_put_the_blame_on_the_out_specs():
    """Traced again, the same collectives as the reference's: the result does differ along the axis, and the
    out_specs claim otherwise (no collective to add)."""
    assert traced.same(FSDP, trace(*FSDP["collectives"][::-1])) and not traced.same(trace(PSUM, complete=False), TP)
    assert not traced.same(trace(("psum", ["data"], None, [4, 6])), TP)
    text = ("out_specs is P() which implies that the corresponding output value is replicated across mesh axis "
            "'data', but could not infer replication over any axes")
    told = jax_errors.mistake(text, "ValueError", jax_errors.Situation(measured=traced.SAME))
    assert told.endswith("the out_specs are what is wrong; name 'data' in out_specs where each device's block of the "
                         "result goes") and "lax.psum adds" not in told


def test_a_collective_run_on_a_value_made_of_other_inputs_is_said():
    """The same gather over the same axis, returning the same shape, of the product x @ w where the reference
    gathers w: what its operand is made of tells them apart."""
    theirs = trace(("all_gather", ["model"], 1, [4, 6], [[1, [4, 6]]], False))
    mine = trace(("all_gather", ["model"], 1, [4, 6], [[0, [8, 4]], [1, [4, 6]]], False))
    assert traced.difference(mine, theirs) == (
        "your lax.all_gather over 'model' runs on a value made of inputs 0 (8, 4) and 1 (4, 6) of its per-device "
        "computation; the reference's on one made of input 1 (4, 6) alone")
    assert not traced.same(mine, theirs)
    unknown = trace(("all_gather", ["model"], 1, [4, 6]))  # read from a trace that failed: no origin
    assert traced.difference(unknown, theirs) is None
    for hostile in ([[1, "x"]], [["1", [4, 6]]], "input 1", [[1, [4, 6]]] * 65):
        assert traced.read(trace(("all_gather", ["model"], 1, [4, 6], hostile, False))) is None, hostile


def test_a_pmaps_axis_name_is_the_students_to_choose():
    def pmapped(axis, *collectives):
        return {**trace(*collectives), "maps": [{"kind": "pmap", "mesh": [axis], "in": [[[[axis]], [2, 7]]],
                                                 "out": [[[axis]]]}]}
    theirs = pmapped("devices", ("psum", ["devices"], None, [7], [[0, [2, 7]]], False))
    assert traced.difference(pmapped("i", ("psum", ["i"], None, [7], [[0, [2, 7]]], False)), theirs) is None
    assert traced.same(pmapped("i", ("psum", ["i"], None, [7], [[0, [2, 7]]], False)), theirs)
    assert traced.difference(pmapped("i", ("pmean", ["i"], None, [7], [[0, [2, 7]]], False)), theirs) == (
        "your function averages with lax.pmean over 'i'; the reference's adds up (lax.psum)")


def test_a_collective_in_a_loop_is_never_counted_against_one_asked_several_times():
    """A fori_loop asks for its ppermute once and runs it n - 1 times; a Python loop asks n - 1 times."""
    loop = trace(("ppermute", ["ring"], None, [6], [[0, [4, 6]]], True))
    unrolled = trace(*[("ppermute", ["ring"], None, [6], [[0, [4, 6]]], False)] * 3)
    assert traced.difference(unrolled, loop) is None and traced.difference(loop, unrolled) is None
    assert traced.difference(trace(), loop) == "the reference's function runs lax.ppermute over 'ring' in a loop, " \
                                              "yours never"
    assert traced.read(trace(("ppermute", ["ring"], None, [6], [[0, [4, 6]]], "yes"))) is None


def test_collectives_are_matched_by_what_they_run_on_not_by_the_order_they_come_in():
    """The reference gathers w2 before w1, the student w1 before w2 and w2 over the wrong axis: the gather of w1
    is the reference's own, and the one difference is where w2's runs."""
    w1 = ("all_gather", ["data"], 0, [4, 3], [[0, [2, 3]]], False)
    theirs = trace(("all_gather", ["data"], 1, [3, 4], [[1, [3, 2]]], False), w1)
    mine = trace(w1, ("all_gather", ["model"], 1, [3, 4], [[1, [3, 2]]], False))
    assert traced.difference(mine, theirs) == ("your function runs lax.all_gather over 'model', which the reference's "
                                               "never does: its lax.all_gather runs over 'data' only")
    failed = trace(("all_gather", ["data"], 0, [4, 3]), complete=False)  # no origins: read as it was bound
    assert traced.difference(failed, theirs) is None  # the reference runs one alike, whatever its place


def test_a_trace_that_failed_is_told_by_a_form_its_collectives_take_that_the_references_never_do():
    """Without what they are made of, the student's gathers over 'data' are compared as a whole with the
    reference's, whatever the order, and whatever the count (a failed trace reads a collective once per level of
    JAX's tracing): a form the reference never takes, against one the student's never takes."""
    theirs = trace(("all_gather", ["data"], 1, [3, 4], [[1, [3, 2]]], False),
                   ("all_gather", ["data"], 0, [4, 3], [[0, [2, 3]]], False))
    failed = trace(*[("all_gather", ["data"], 0, [4, 3])] * 4, ("all_gather", ["data"], 0, [6, 2]), complete=False)
    assert traced.difference(failed, theirs) == ("your lax.all_gather over 'data' gathers along axis 0 and returns "
                                                 "(6, 2) on each device; the reference's gathers along axis 1 and "
                                                 "returns (3, 4) on each device")
    repeated = trace(*[("all_gather", ["data"], 0, [4, 3])] * 4, complete=False)
    assert traced.difference(repeated, theirs) is None  # every form it takes is one of the reference's
