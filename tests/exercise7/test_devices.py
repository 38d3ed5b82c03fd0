"""Suite for task devices: count_devices(platform) and put_on_device(x, index).

Visible tests try the statement's cases; the hidden ones (course.yaml) put other arrays (a scalar,
ints) on the last device at every count and try the other bad indices (far too large, negative).
"""

import numpy as np
import pytest

from grader.suite import StudentFailure, expect_close, expect_raises


def _expected_counts(student):
    """Device counts per platform the grader knows for this configuration (emulated CPU: no GPU, no TPU)."""
    n = student.devices
    if student.backend != "cpu":
        return {None: n}
    return {None: n, "cpu": n, "gpu": 0, "tpu": 0}


def test_count_devices(student):
    for platform, expected in _expected_counts(student).items():
        call = "count_devices()" if platform is None else f"count_devices({platform!r})"
        try:
            got = student.call("devices.count_devices", platform)
        except StudentFailure as failure:
            if failure.exc_type == "RuntimeError" and platform is not None:
                raise AssertionError(f"{call} raised RuntimeError on a machine with no {platform.upper()}: "
                                     f"a platform that is not there has 0 devices; catch the RuntimeError "
                                     f"that jax.devices({platform!r}) raises") from None
            raise
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            raise AssertionError(f"{call} returned {type(got).__name__} {got!r}, expected an int")
        if got != expected:
            extra = ""
            if platform is not None and got == student.devices:
                extra = ": it counts every device, whatever the platform; keep only those of this platform"
            raise AssertionError(f"{call} returned {got}, expected {expected} on this machine "
                                 f"({student.devices} CPU devices){extra}")


def _check_placed(student, x, index, devices):
    what = f"put_on_device(x, {index}) with x of shape {x.shape} and dtype {x.dtype}"
    got = student.probe("probes_devices.put_on_device", x, index)
    if got["type"] != "jax.Array":
        raise AssertionError(f"{what} returned a {got['type']}, expected a jax.Array: return what "
                             "jax.device_put gives, a NumPy array lives on no device")
    if got["on"] != [got["wanted"]]:
        on = ", ".join(map(str, got["on"]))
        raise AssertionError(f"{what} returned an array on device {on}, expected device {got['wanted']} "
                             f"(jax.devices()[{index}] of {devices})")
    expect_close(got["value"], x, what=what, rtol=0, atol=0)
    if got["value"].dtype != x.dtype:
        raise AssertionError(f"{what} returned dtype {got['value'].dtype}: a copy keeps x's dtype ({x.dtype}); "
                             "jax.device_put(x, device) moves x without converting it")


@pytest.mark.devices(1, 2, 4)
def test_put_on_device_places_array(student, rng, devices):
    for index, shape in zip(sorted({0, devices // 2, devices - 1}), [(5,), (3, 7), (2, 2, 2)]):
        _check_placed(student, rng.normal(size=shape).astype(np.float32), index, devices)


def test_put_on_device_other_arrays(student, rng, devices):
    _check_placed(student, np.float32(rng.normal()), devices - 1, devices)
    _check_placed(student, rng.integers(0, 9, size=(2, 3)).astype(np.int32), devices - 1, devices)


def _expect_bad_index(student, rng, devices, indices):
    x = rng.normal(size=4).astype(np.float32)
    for index in indices:
        what = f"put_on_device(x, {index}) with {devices} device{'s' if devices > 1 else ''}"
        expect_raises(lambda: student.call("devices.put_on_device", x, index), "ValueError", what,
                      mentions=(index, devices), facts=x.shape,
                      why=f"device indices run from 0 to {devices - 1}; name the index and the device count")


@pytest.mark.devices(1, 2, 4)
def test_put_on_device_rejects_bad_index(student, rng, devices):
    _expect_bad_index(student, rng, devices, [devices])


def test_put_on_device_rejects_other_bad_indices(student, rng, devices):
    """Far too large, and negative: jax.devices()[-1] is valid Python, but -1 is no device index here."""
    _expect_bad_index(student, rng, devices, [devices + 3, -1])
