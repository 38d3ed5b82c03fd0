"""Reference solution for task devices (see exercises/exercise7/devices.py for the task)."""

import jax


def count_devices(platform=None):
    if platform is None:
        return jax.device_count()
    try:
        return len(jax.devices(platform))
    except RuntimeError:
        return 0


def put_on_device(x, index):
    n = jax.device_count()
    if not 0 <= index < n:
        raise ValueError(f"no device {index}: there are {n} devices, indices 0 .. {n - 1}")
    return jax.device_put(x, jax.devices()[index])
