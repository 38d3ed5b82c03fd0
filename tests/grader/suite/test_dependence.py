"""What a change of one slice of an input reaches in the student's result and in the answer
(grader.suite.dependence)."""

import numpy as np

from grader.suite import dependence
from grader.suite.differences import Probe, measured

X = np.random.default_rng(0).normal(size=(4, 6)).astype(np.float32)


def total(x):  # every device's row replaced by the sum over the devices: an all-reduce
    return np.broadcast_to(x.astype(np.float64).sum(0), x.shape)


def told(reference, rerun, inputs, names, got=None):
    """dependence.told with the two results on the test's inputs, as a check has them."""
    got = rerun(*inputs) if got is None else got
    return dependence.told(reference, rerun, inputs, names, got, reference(*inputs), 1e-5)


def test_a_device_that_never_sees_the_others_is_told_by_what_its_row_reaches():
    said = told(total, lambda x: x.astype(np.float64) * 2, (X,), ("x",))
    assert said == ("depends on x otherwise than the answer: changing only x[0, :] changes your result at [0, :] "
                    "only; it changes the answer at every entry")


def test_a_statistic_over_everything_where_one_per_column_belongs():
    said = told(total, lambda x: np.full(x.shape, x.astype(np.float64).sum()), (X,), ("x",))
    assert said.endswith("changing only x[:, 0] changes your result at every entry; it changes the answer at [:, 0] "
                         "only")


def test_a_change_that_is_the_same_along_the_slice_would_vanish_in_a_centred_result():
    """A column's own mean removed: a change by one constant along the column is invisible, so the change varies."""
    def centred(x):
        return x - x.mean(0)

    def centred_globally(x):
        return x - x.mean()
    said = told(centred_globally, centred, (X,), ("x",))
    assert "changing only x[:, 0] changes your result at [:, 0] only; it changes the answer at every entry" in said


def test_the_same_reach_a_failing_rerun_or_another_shape_says_nothing():
    assert told(total, lambda x: 3 * total(x), (X,), ("x",)) is None  # a factor: reach is the same

    def raises(x):
        raise RuntimeError("time-out")
    assert told(total, raises, (X,), ("x",), got=2 * X) is None
    assert told(total, lambda x: x.sum(0), (X,), ("x",)) is None


def test_at_most_so_many_reruns_however_large_the_input():
    calls = []

    def counted(x):
        calls.append(1)
        return total(x)
    big = np.ones((40, 50), np.float32)
    assert told(total, counted, (big,), ("x",)) is None
    assert len(calls) <= dependence.MOST + 1


def test_a_wrong_value_is_told_by_its_reach_when_no_relation_holds():
    probe = Probe(reference=total, inputs=(X,), rerun=lambda x: x.astype(np.float64) ** 3, names=("x",))
    said = measured(X.astype(np.float64) ** 3, total(X), probe=probe)
    assert said.startswith("depends on x otherwise than the answer: changing only x[0, :] changes your result at "
                           "[0, :] only")


def test_a_relu_applied_to_the_answer_is_a_relation_said_before_any_rerun():
    y = np.array([[1.5, -2.0], [-0.5, 3.0]])
    said = measured(np.maximum(y, 0), y, probe=Probe(reference=lambda: y, rerun=lambda: 1 / 0))
    assert said == ("is the answer with each of its 2 negative entries set to 0 and the others right: a relu applied "
                    "to the result itself")


def test_a_result_never_negative_where_the_answer_is_is_said():
    y = np.array([[1.5, -2.0], [-0.5, 3.0]])
    got = np.array([[0.2, 0.0], [1.0, 0.0]])
    assert measured(got, y) == ("has no negative entry, where the answer has 2, and 2 entries exactly 0: it is "
                                "clipped at 0, as a relu clips what it is applied to")
    assert measured(-got, y) is None
    assert measured(y ** 2, y) is None  # never negative, but not clipped: squares say nothing of a relu
    one = np.array([[1.5, 2.0], [-0.5, 3.0]])  # one device's 2 x 2 result: one negative entry, one clipped
    assert measured(np.array([[0.7, 1.1], [0.0, 2.0]]), one) == (
        "has no negative entry, where the answer has 1, and 1 entry exactly 0: it is clipped at 0, as a relu clips "
        "what it is applied to")
    assert measured(np.array([[1.5, 0.0], [0.0, 3.0]]), one).startswith("is 0 at each of its 2 wrong entries")


def test_a_factor_that_is_one_count_over_another_names_both():
    """A mean divided by the row's length where the device count belongs: 2/7 of the answer."""
    x = np.arange(14, dtype=np.float64).reshape(2, 7) + 1
    answer = np.broadcast_to(x.mean(0), x.shape)
    probe = Probe(reference=lambda v: answer, inputs=(x,), names=("x",), counts={"devices": 2})
    assert measured(answer * 2 / 7, answer, probe=probe) == (
        "is 2/7 of the answer (2 is the number of devices and of entries along axis 0 of x, 7 the number of entries "
        "along axis 1 of x) at every entry")
    assert measured(answer * 0.31, answer, probe=probe) == "is 0.31 times the answer at every entry"


def test_blocks_turned_round_by_k_places_are_said_as_such():
    from grader.suite.differences import relation
    expected = np.arange(8.0).reshape(4, 2) + 1
    said = relation(np.roll(expected, -1, axis=0), expected, counts={"devices": 4})
    assert said.startswith("holds the right 4 blocks of rows turned round by 1 place: block b holds what block "
                           "(b + 1) mod 4 should")
    swapped = expected[[1, 0, 3, 2]]
    assert relation(swapped, expected, counts={"devices": 4}).startswith("holds the right 4 blocks of rows in the "
                                                                          "wrong order")


def test_an_input_without_a_name_is_called_by_its_place():
    said = told(total, lambda x: x.astype(np.float64) * 2, (X,), ("",))
    assert said.startswith("depends on input 0 otherwise than the answer: changing only [0, :] of input 0 changes")
