"""grader.suite.value_patterns: wrong values whose pattern names a multi-device mistake."""

import numpy as np
import pytest

from grader.suite.value_patterns import recognise

RNG = np.random.default_rng(0)
PARTS = RNG.normal(size=(4, 5))            # what each of 4 devices adds
TOTAL = PARTS.sum(axis=0)
REPLICATED = np.broadcast_to(TOTAL, (4, 5))  # every device holds the total


@pytest.mark.parametrize("got, kwargs, words", [
    (4 * TOTAL, {"devices": 4}, ("is 4 times the answer on 4 devices", "lax.psum where lax.pmean")),
    (TOTAL / 4, {"devices": 4}, ("is 1/4 of the answer", "lax.pmean where lax.psum")),
    (TOTAL * 0.5, {"devices": 4}, ("is 0.5 times the answer everywhere",)),
    (TOTAL - PARTS[2], {"parts": PARTS}, ("leaves out device 2's contribution",)),
    (TOTAL + PARTS[0], {"parts": PARTS}, ("counts device 0's contribution twice",)),
    (TOTAL * 7 / 8, {"rows": (7, 8)}, ("is 7/8 of the answer", "the 1 padding rows", "divide by 7")),
    (TOTAL + 3e-4, {}, ("close to the answer but off by up to 0.0003", "epsilon")),
    (TOTAL * 0.999, {"devices": 4}, ("close to the answer", "epsilon")),  # sqrt(var + eps): a factor near 1
])
def test_a_recognisable_wrong_value_is_named(got, kwargs, words):
    said = recognise(got, TOTAL, **kwargs)
    assert said and all(w in said for w in words), said


def test_a_result_shifted_by_one_device_is_named():
    expected = RNG.normal(size=(4, 3))
    said = recognise(np.roll(expected, 1, axis=0), expected, devices=4, device_axis=True)
    assert "shifted by one device" in said and "the one before it" in said
    said = recognise(np.roll(expected, -1, axis=0), expected, devices=4, device_axis=True)
    assert "the one after it" in said


def test_devices_that_disagree_on_a_global_value_are_named():
    said = recognise(PARTS, REPLICATED, devices=4, device_axis=True)
    assert "device 0 and device 1 hold different values" in said and "collective" in said


def test_disagreement_is_not_claimed_where_devices_are_meant_to_differ():
    expected = RNG.normal(size=(4, 3))
    assert recognise(expected + RNG.normal(size=(4, 3)), expected, devices=4, device_axis=True) is None


def test_a_value_without_a_pattern_is_left_to_the_plain_message():
    assert recognise(RNG.normal(size=5), TOTAL, devices=4, parts=PARTS) is None


def test_without_the_device_count_n_times_is_only_a_factor():
    said = recognise(4 * TOTAL, TOTAL)
    assert "4 times the answer everywhere" in said and "psum" not in said


def test_shape_mismatch_and_nan_are_not_patterns():
    assert recognise(np.zeros(3), TOTAL, devices=4) is None
    assert recognise(np.full(5, np.nan), TOTAL, devices=4) is None


def test_a_right_value_has_no_pattern():
    assert recognise(TOTAL + 1e-7, TOTAL, devices=1, parts=PARTS) is None


def test_on_one_device_twice_the_answer_is_no_psum_mistake():
    said = recognise(2 * TOTAL, TOTAL, devices=1)
    assert "2 times the answer everywhere" in said


def test_each_device_missing_another_devices_part_is_named():
    per_device = np.broadcast_to(PARTS[:, None], (4, 4, 5))  # part k as seen on every device
    short = REPLICATED - np.roll(PARTS, -1, axis=0)          # device j misses device j + 1's block
    said = recognise(short, REPLICATED, devices=4, parts=per_device, device_axis=True)
    assert "on every device leaves out one device's contribution (device 0 misses device 1's)" in said
    said = recognise(REPLICATED + PARTS, REPLICATED, devices=4, parts=per_device, device_axis=True)
    assert "counts one device's contribution twice (device 0 adds device 0's once more)" in said
