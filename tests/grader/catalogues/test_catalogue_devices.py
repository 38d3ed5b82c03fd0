"""Realistic wrong submissions for task devices: each loses points on devices only, with a reason that names it."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong

# Each submission carries one mistake in count_devices and one in put_on_device; each mistake is
# (test it fails, words its message must contain, device counts at which it shows up).
SUBMISSIONS = {
    "platform ignored, index ignored": Wrong(
        {"devices": """
        import jax

        def count_devices(platform=None):
            return jax.device_count()

        def put_on_device(x, index):
            n = jax.device_count()
            if not 0 <= index < n:
                raise ValueError(f"no device {index}: there are {n} devices")
            return jax.device_put(x, jax.devices()[0])
        """},
        fails=(("test_count_devices", ("count_devices('gpu') returned", "counts every device"), {1, 2, 4}),
               ("test_put_on_device_places_array", ("returned an array on device 0, expected device",), {2, 4}))),
    "device_count(platform) unguarded, IndexError": Wrong(
        {"devices": """
        import jax

        def count_devices(platform=None):
            return jax.device_count(platform)

        def put_on_device(x, index):
            return jax.device_put(x, jax.devices()[index])
        """},
        fails=(("test_count_devices", ("count_devices('gpu') raised RuntimeError", "0 devices"), {1, 2, 4}),
               ("test_put_on_device_rejects_bad_index", ("raised IndexError at devices.py:", "expected ValueError"),
                {1, 2, 4}))),
    "hard-coded 4 devices, silent error message": Wrong(
        {"devices": """
        import jax

        def count_devices(platform=None):
            return 4 if platform in (None, "cpu") else 0

        def put_on_device(x, index):
            if not 0 <= index < jax.device_count():
                raise ValueError("bad device index")
            return jax.device_put(x, jax.devices()[index])
        """},
        fails=(("test_count_devices", ("count_devices() returned 4, expected",), {1, 2}),
               ("test_put_on_device_rejects_bad_index", ("does not name", "bad device index"), {1, 2, 4}))),
    "upper-case platform filter, NumPy result": Wrong(
        {"devices": """
        import jax
        import numpy as np

        def count_devices(platform=None):
            return len([d for d in jax.devices() if platform is None or d.platform == platform.upper()])

        def put_on_device(x, index):
            if not 0 <= index < jax.device_count():
                raise ValueError(f"index {index} of {jax.device_count()} devices")
            return np.asarray(jax.device_put(x, jax.devices()[index]))
        """},
        fails=(("test_count_devices", ("count_devices('cpu') returned 0",), {1, 2, 4}),
               ("test_put_on_device_places_array", ("expected a jax.Array",), {1, 2, 4}))),
    "every array turned float": Wrong(
        {"devices": """
        import jax
        import jax.numpy as jnp

        def count_devices(platform=None):
            if platform is None:
                return jax.device_count()
            return sum(d.platform == platform for d in jax.devices())

        def put_on_device(x, index):
            if not 0 <= index < jax.device_count():
                raise ValueError(f"no device {index} among {jax.device_count()}")
            return jax.device_put(jnp.asarray(x, jnp.float32), jax.devices()[index])
        """},
        fails=(("test_put_on_device_other_arrays", ("returned dtype float32", "keeps x's dtype (int32)"), {1, 2, 4}),)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "an index checked one too late, and -1 let through": Wrong(
        apart("devices", ("if not 0 <= index < n:", "if index > n:")), "2",
        says=("put_on_device(x, 2) with 2 devices raised IndexError at devices.py:", "expected ValueError"),
        fails=(("test_put_on_device_rejects_bad_index", ("IndexError at devices.py:", "`return jax.device_put(x, "
                                                         "jax.devices()[index])`", "list index out of range"), {2}),
               ("test_put_on_device_rejects_other_bad_indices", ("put_on_device(x, -1)", "returned a value"), {2}))),
}


RIGHT = {
    "written apart: devices filtered by jax.devices(platform)": Right(apart("devices"), "2"),
}


CATALOGUE = Catalogue("devices", SUBMISSIONS, RIGHT, intact="basics")


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_wrong_devices_loses_points_on_devices_only(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_devices_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
