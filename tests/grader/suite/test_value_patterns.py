"""grader.suite.value_patterns: facts verified on every entry, and the cause only a suite may name."""

import numpy as np
import pytest

from grader.suite import expect_close
from grader.suite.value_patterns import find, misplaced, recognise

RNG = np.random.default_rng(0)
PARTS = RNG.normal(size=(4, 5))            # what each of 4 devices adds
TOTAL = PARTS.sum(axis=0)
REPLICATED = np.broadcast_to(TOTAL, (4, 5))  # every device holds the total


@pytest.mark.parametrize("got, kwargs, key, words", [
    (4 * TOTAL, {"devices": 4}, "n_times", ("is 4 times the answer on 4 devices",)),
    (TOTAL / 4, {"devices": 4}, "1/n", ("is 1/4 of the answer on 4 devices",)),
    (TOTAL * 0.5, {"devices": 4}, "factor", ("is 0.5 times the answer at every entry",)),
    (TOTAL - PARTS[2], {"parts": PARTS}, "missing_part", ("leaves out device 2's contribution",)),
    (TOTAL + PARTS[0], {"parts": PARTS}, "extra_part", ("counts device 0's contribution twice",)),
    (TOTAL * 7 / 8, {"rows": (7, 8)}, "padding", ("is 7/8 of the answer", "the 1 padding rows", "divide by 7")),
    (TOTAL + 3e-4, {}, "epsilon", ("close to the answer but off by up to 0.0003",)),
    (TOTAL * 0.999, {"devices": 4}, "epsilon", ("close to the answer",)),  # sqrt(var + eps): a factor near 1
])
def test_a_pattern_is_a_fact_verified_on_every_entry(got, kwargs, key, words):
    found = find(got, TOTAL, **kwargs)
    assert found and found[0] == key and all(w in found[1] for w in words), found


def test_the_one_part_that_adds_anything_counted_twice_is_a_factor_not_that_device():
    """Round 46: every contribution counted twice, where device 1's partial was 0, was told as device 0's twice."""
    lone = np.stack([PARTS[0], np.zeros(5)])
    found = find(2 * PARTS[0], PARTS[0], devices=2, parts=lone)
    assert found and found[0] == "n_times", found


def test_without_a_declared_cause_only_the_fact_is_said():
    """No psum, no pmean, no "constant factor is wrong": which mistake a factor is depends on the task."""
    for got, kwargs in ((4 * TOTAL, {"devices": 4}), (TOTAL / 4, {"devices": 4}), (TOTAL * 0.5, {})):
        said = recognise(got, TOTAL, **kwargs)
        assert not [w for w in ("psum", "pmean", "constant factor", "count") if w in said], said


def test_the_suites_cause_follows_the_fact():
    said = recognise(4 * TOTAL, TOTAL, devices=4, causes={"n_times": "every device already holds the total"})
    assert said == "is 4 times the answer on 4 devices: every device already holds the total"


def test_a_scalar_is_some_multiple_of_any_answer_so_no_factor_is_claimed():
    """A dot product that dropped the remainder is 1.013 times the answer: that is no pattern."""
    assert find(np.float64(1.013 * 2.5), np.float64(2.5), devices=2) is None
    assert find(np.full(3, 1.5), np.full(3, 1.0)) is None  # three entries, one value: still one number
    assert find(np.float64(5.0), np.float64(2.5), devices=2)[0] == "n_times"  # n exactly is a fact


def test_a_result_shifted_by_one_device_is_named():
    expected = RNG.normal(size=(4, 3))
    _, fact = find(np.roll(expected, 1, axis=0), expected, devices=4, device_axis=True)
    assert "shifted by one device" in fact and "the device before it" in fact
    _, fact = find(np.roll(expected, -1, axis=0), expected, devices=4, device_axis=True)
    assert "the device after it" in fact


def test_devices_that_disagree_on_a_global_value_are_named_without_advice():
    said = recognise(PARTS, REPLICATED, devices=4, device_axis=True)
    assert "device 0 and device 1 hold different values" in said and "collective" not in said


def test_a_device_holding_the_answers_values_in_other_places_is_told_where():
    """One device of four holds chunk 2 of the sum where chunk 1 belongs, and its own stale values in chunk 0
    (a ring's all-gather writing each arriving chunk one place off): measured entry by entry, said as such."""
    total = RNG.normal(size=12)
    got = np.tile(total, (4, 1))
    got[2, 4:8], got[2, 0:4], got[2, 11] = total[8:12], RNG.normal(size=4), total[0]
    said = recognise(got, np.tile(total, (4, 1)), devices=4, device_axis=True)
    assert "device 0 and device 2 hold different values" in said, said
    assert ("on device 2, 9 of the 12 entries are wrong: entries 4-7 hold what entries 8-11 should; entry 11 holds "
            "what entry 0 should; entries 0-3 hold values the answer has nowhere") in said, said


def test_values_the_answer_repeats_are_never_said_to_be_misplaced():
    """A zero where the answer has zeros at several entries says nothing of where it came from."""
    expected = np.array([0.0, 0.0, 1.5, 0.0, 2.5, 0.0])
    assert misplaced(np.array([0.0, 0.0, 0.0, 0.0, 2.5, 0.0]), expected) is None
    assert misplaced(np.array([0.0, 0.0, 1.5, 0.0, 1.5, 0.0]), expected) == (
        "1 of the 6 entries is wrong: entry 4 holds what entry 2 should")


def test_disagreement_is_not_claimed_where_devices_are_meant_to_differ():
    expected = RNG.normal(size=(4, 3))
    assert find(expected + RNG.normal(size=(4, 3)), expected, devices=4, device_axis=True) is None


def test_a_value_without_a_pattern_is_left_to_the_plain_message():
    assert find(RNG.normal(size=5), TOTAL, devices=4, parts=PARTS) is None


def test_shape_mismatch_and_nan_are_not_patterns():
    assert find(np.zeros(3), TOTAL, devices=4) is None
    assert find(np.full(5, np.nan), TOTAL, devices=4) is None


def test_a_right_value_has_no_pattern():
    assert find(TOTAL + 1e-7, TOTAL, devices=1, parts=PARTS) is None


def test_on_one_device_twice_the_answer_is_only_a_factor():
    assert find(2 * TOTAL, TOTAL, devices=1) == ("factor", "is 2 times the answer at every entry")


def test_each_device_missing_another_devices_part_is_named():
    per_device = np.broadcast_to(PARTS[:, None], (4, 4, 5))  # part k as seen on every device
    short = REPLICATED - np.roll(PARTS, -1, axis=0)          # device j misses device j + 1's block
    _, fact = find(short, REPLICATED, devices=4, parts=per_device, device_axis=True)
    assert "on every device leaves out one device's contribution (device 0 misses device 1's)" in fact
    _, fact = find(REPLICATED + PARTS, REPLICATED, devices=4, parts=per_device, device_axis=True)
    assert "counts one device's contribution twice (device 0 adds device 0's once more)" in fact


def _fails(*args, **kwargs) -> str:
    with pytest.raises(AssertionError) as info:
        expect_close(*args, **kwargs)
    return str(info.value)


def test_expect_close_says_the_fact_then_the_declared_cause():
    said = _fails(np.float32(5.0), 2.5, "dot(x, y)", devices=2, causes={"n_times": "take one device's total"})
    assert said == "dot(x, y) is 2 times the answer on 2 devices: take one device's total"


def test_expect_close_refuses_a_cause_that_names_no_pattern():
    with pytest.raises(ValueError, match="causes has no 'n times'"):
        expect_close(np.float32(5.0), 2.5, "f", devices=2, causes={"n times": "typo"})


def test_a_changed_dtype_is_said_before_the_values():
    said = _fails(np.arange(3, dtype=np.float32), np.arange(3), "ring_allreduce", dtype=np.int32,
                  causes={"dtype": "accumulate in the input's dtype"})
    assert said == ("ring_allreduce: dtype changed from int32 to float32, but the dtype is part of the answer "
                    "(accumulate in the input's dtype)")


def test_a_bfloat16_result_is_graded_like_any_other_number():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    got = np.array([1.0, 2.0, 3.0], dtype=ml_dtypes.bfloat16)
    expect_close(got, [1.0, 2.0, 3.0], "f", dtype=ml_dtypes.bfloat16)
    assert "dtype changed from float32 to bfloat16" in _fails(got, [1.0, 2.0, 3.0], "f", dtype=np.float32)


@pytest.mark.parametrize("bad, word, where", [(np.nan, "NaN", "0 / 0"), (np.inf, "inf", "dividing a non-zero")])
def test_nan_and_inf_say_where_they_are_and_where_they_come_from(bad, word, where):
    got = np.array([[1.0, 2.0], [bad, 4.0]])
    said = _fails(got, np.ones((2, 2)), "standardize(x)")
    assert said.startswith(f"standardize(x) returned {word} at 1 of 4 entries, first at index (1, 0) (expected 1)")
    assert where in said
    said = _fails(got, np.ones((2, 2)), "standardize(x)", causes={"nan": "one number per device has no spread"})
    assert word == "inf" or said.endswith("one number per device has no spread")
