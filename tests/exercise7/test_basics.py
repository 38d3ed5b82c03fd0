"""Hidden suite for task basics: pmap over a leading device axis, and a clear error when it does not fit."""

import numpy as np
import pytest

from grader.suite import expect_close, expect_raises, expect_shape

FUNCTIONS = ("square_plus_one", "per_device_sum", "per_device_matmul")


def _normal(rng, shape):
    return rng.normal(size=shape).astype(np.float32)


def test_square_plus_one(student, rng, devices):
    for shape in [(devices, 7), (devices, 3, 5)]:
        x = _normal(rng, shape)
        got = student.call("basics.square_plus_one", x)
        expect_close(got, x.astype(np.float64) ** 2 + 1, what=f"square_plus_one(x) with x of shape {shape}")


def test_per_device_sum(student, rng, devices):
    for shape in [(devices, 7), (devices, 3, 5)]:
        x = _normal(rng, shape)
        what = f"per_device_sum(x) with x of shape {shape}"
        got = expect_shape(student.call("basics.per_device_sum", x), (devices,), what + " (one sum per device)")
        if devices > 1 and np.allclose(got, x.sum(dtype=np.float64), rtol=1e-4, atol=1e-4):
            raise AssertionError(f"{what}: every device holds the sum over all devices; each device should sum "
                                 "only its own block x[d] (no lax.psum here)")
        expect_close(got, x.astype(np.float64).reshape(devices, -1).sum(axis=1), what=what, atol=1e-4)


def test_per_device_matmul(student, rng, devices):
    X, Y = _normal(rng, (devices, 3, 5)), _normal(rng, (devices, 5, 2))
    got = student.call("basics.per_device_matmul", X, Y)
    expect_close(got, np.matmul(X.astype(np.float64), Y.astype(np.float64)),
                 what="per_device_matmul(X, Y) with X of shape (n, 3, 5) and Y of shape (n, 5, 2)", atol=1e-4)


def _wrong_inputs(name, n):
    """(description, argument shapes, the leading axis at fault) for inputs that do not fit n devices.

    The sizes are those pmap handles worst: n + 1 (IndivisibleError), 2n (a squeeze error) and n - 1
    (no error: pmap runs on fewer devices). Other dimensions (6, 10) never equal one of them.
    """
    for lead in sorted({n + 1, 2 * n} | ({n - 1} if n > 1 else set())):
        if name == "per_device_matmul":
            yield f"X ({lead}, 6, 10) and Y ({lead}, 10, 6)", [(lead, 6, 10), (lead, 10, 6)], lead
        else:
            yield f"x ({lead}, 6)", [(lead, 6)], lead
    if name == "per_device_matmul":
        yield f"X ({n}, 6, 10) and Y ({n + 1}, 10, 6)", [(n, 6, 10), (n + 1, 10, 6)], n + 1


@pytest.mark.parametrize("name", FUNCTIONS)
def test_rejects_wrong_leading_axis(student, rng, devices, name):
    plural = "s" if devices > 1 else ""
    for shapes_text, shapes, lead in _wrong_inputs(name, devices):
        args = [_normal(rng, s) for s in shapes]
        if lead < devices:
            why = (f"pmap would quietly run on {lead} of the {devices} devices; compare the leading axis "
                   "with jax.device_count() and name both numbers")
        else:
            why = f"the leading axis must equal the device count; name both {lead} and {devices}"
        expect_raises(lambda: student.call(f"basics.{name}", *args), "ValueError",
                      f"{name} with {shapes_text} on {devices} device{plural}", mentions=(lead, devices), why=why)


def test_results_live_on_every_device(student, rng, devices):
    inputs = {"square_plus_one": [(devices, 4)], "per_device_sum": [(devices, 4)],
              "per_device_matmul": [(devices, 2, 3), (devices, 3, 2)]}
    for name, shapes in inputs.items():
        got = student.probe("probes_basics.rows_on_devices", f"basics.{name}", *[_normal(rng, s) for s in shapes])
        if got["type"] != "jax.Array":
            raise AssertionError(f"{name} returned a {got['type']}, expected the jax.Array that jax.pmap "
                                 "returns (its rows live on the devices; a NumPy copy lives on none)")
        if got["on"] != devices:
            raise AssertionError(f"{name}'s result lives on {got['on']} device(s), expected one row on each of "
                                 f"the {devices}: did you use jax.vmap (one device) instead of jax.pmap?")
