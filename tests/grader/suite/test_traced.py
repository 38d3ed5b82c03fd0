"""How a refused program's collectives differ from the reference's, from the two traces (grader.suite.traced)."""

from __future__ import annotations

from grader.suite import jax_errors, traced

TP = [["psum", ["model"]]]
FSDP = [["all_gather", ["data"]], ["psum_scatter", ["data"]], ["pmean", ["data"]]]


def test_a_collective_over_other_axes_is_said_first():
    assert traced.difference([["psum", ["data"]]], TP) == ("your function's lax.psum runs over 'data'; the "
                                                           "reference's runs over 'model'")


def test_a_reduction_combining_otherwise_over_the_same_axes():
    assert traced.difference([["pmean", ["model"]]], TP) == ("your function averages with lax.pmean over 'model'; "
                                                             "the reference's adds up (lax.psum)")


def test_one_missing_and_one_too_many_are_both_said():
    mine = [["all_gather", ["data"]], ["all_gather", ["data"]], ["all_gather", ["data"]], ["psum_scatter", ["data"]]]
    assert traced.difference(mine, FSDP) == ("the reference's function runs lax.pmean over 'data' once, yours never; "
                                             "your function runs lax.all_gather over 'data' 3 times, the reference's "
                                             "once")
    assert traced.difference([], TP) == "the reference's function runs lax.psum over 'model' once, yours never"


def test_the_same_collectives_or_a_list_not_of_a_traces_form_say_nothing():
    assert traced.difference(FSDP[::-1], FSDP) is None  # order is not compared
    for hostile in ([["psum", "model"]], [["os.system", ["model"]]], [["psum", ["x" * 41]]], "psum", [["psum"]] * 2,
                    [["psum", ["model"]]] * 65, [["psum", [3]]]):
        assert traced.difference(hostile, TP) is None, hostile


def test_a_replication_error_with_a_measured_difference_drops_the_list_of_guesses():
    text = ("shard_map applied to the function 'f' was given out_specs which require replication which can't be "
            "statically inferred given the mesh:\n\nThe mesh given has shape (2, 2) with corresponding axis names "
            "('data', 'model').\n\nout_specs is P('data', None) which implies that the corresponding output value is "
            "replicated across mesh axis 'model', but could not infer replication over any axes")
    measured = traced.difference([["psum", ["data"]]], TP)
    guessed = jax_errors.mistake(text, "ValueError")
    told = jax_errors.mistake(text, "ValueError", jax_errors.Situation(measured=measured))
    assert "lax.pmean averages them" in guessed and "lax.pmean averages them" not in told
    assert told.endswith("Traced again without that check, your function's lax.psum runs over 'data'; the "
                         "reference's runs over 'model'")
