"""Hidden suite for task devices: count_devices(platform) and put_on_device(x, index)."""

import numpy as np

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


def test_put_on_device_places_array(student, rng, devices):
    for index, shape in zip(sorted({0, devices // 2, devices - 1}), [(5,), (3, 7), (2, 2, 2)]):
        x = rng.normal(size=shape).astype(np.float32)
        what = f"put_on_device(x, {index})"
        got = student.probe("probes_devices.put_on_device", x, index)
        if got["type"] != "jax.Array":
            raise AssertionError(f"{what} returned a {got['type']}, expected a jax.Array: return what "
                                 "jax.device_put gives, a NumPy array lives on no device")
        if got["on"] != [got["wanted"]]:
            on = ", ".join(map(str, got["on"]))
            raise AssertionError(f"{what} returned an array on device {on}, expected device {got['wanted']} "
                                 f"(jax.devices()[{index}] of {devices})")
        expect_close(got["value"], x, what=what, rtol=0, atol=0)


def test_put_on_device_rejects_bad_index(student, rng, devices):
    x = rng.normal(size=4).astype(np.float32)
    for index in (devices, devices + 3, -1):
        what = f"put_on_device(x, {index}) with {devices} device{'s' if devices > 1 else ''}"
        expect_raises(lambda: student.call("devices.put_on_device", x, index), "ValueError", what,
                      mentions=(index, devices),
                      why=f"device indices run from 0 to {devices - 1}; name the index and the device count")
