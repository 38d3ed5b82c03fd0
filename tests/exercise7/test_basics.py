"""Suite for task basics: pmap over a leading device axis, and a clear error when it does not fit.

Visible tests run the statement's shapes at 1, 2 and 4 devices; the hidden ones (course.yaml) try
other shapes of int32 numbers (whose dtype the results keep) and the other wrong leading axes at every
count, and read each function's compiled program for its jax.pmap.
"""

import numpy as np
import pytest

from grader.suite import StudentFailure, expect_close, expect_raises, expect_shape, work
from grader.suite.bypass import Asks

FUNCTIONS = ("square_plus_one", "per_device_sum", "per_device_matmul")


def _normal(rng, shape):
    return rng.normal(size=shape).astype(np.float32)


def _ints(rng, shape):
    return rng.integers(-9, 10, size=shape).astype(np.int32)


def _same_dtype(x) -> dict:
    """expect_close's arguments that make x's dtype part of the answer, as the statement says."""
    how = "a float literal such as 2.0, or an astype, turns it into floats" if x.dtype.kind == "i" \
        else "convert nothing"
    return {"dtype": x.dtype,
            "causes": {"dtype": f"computed from {x.dtype} numbers, the result is {x.dtype} too: {how}"}}


def _check_square_plus_one(student, x):
    got = student.call("basics.square_plus_one", x)
    expect_close(got, x.astype(np.float64) ** 2 + 1, what=f"square_plus_one(x) with x of shape {x.shape}",
                 **_same_dtype(x))


def _check_per_device_sum(student, x):
    devices = len(x)
    what = f"per_device_sum(x) with x of shape {x.shape}"
    got = expect_shape(student.call("basics.per_device_sum", x), (devices,), what + " (one sum per device)")
    if devices > 1 and np.allclose(got, x.sum(dtype=np.float64), rtol=1e-4, atol=1e-4):
        raise AssertionError(f"{what}: every device holds the sum over all devices; each device should sum "
                             "only its own block x[d] (no lax.psum here)")
    expect_close(got, x.astype(np.float64).reshape(devices, -1).sum(axis=1), what=what, atol=1e-4, **_same_dtype(x))


def _check_per_device_matmul(student, X, Y):
    got = student.call("basics.per_device_matmul", X, Y)
    expect_close(got, np.matmul(X.astype(np.float64), Y.astype(np.float64)),
                 what=f"per_device_matmul(X, Y) with X of shape {X.shape} and Y of shape {Y.shape}", atol=1e-4,
                 **_same_dtype(X))


# Each function's inputs in the value tests (shapes after the device axis): float32 at 1, 2 and 4 devices, int32
# at every count; the structural test reads each program at them too, after its own (MEASURED), so a program
# honest only where it is read earns nothing there.
VISIBLE_COUNTS = (1, 2, 4)  # as the markers say (a marker stays literal: tests/grader/test_course.py reads it)
SHAPES = {"square_plus_one": (((7,),), ((3, 5),)), "per_device_sum": (((7,),), ((3, 5),)),
          "per_device_matmul": (((3, 5), (5, 2)), ((1, 4), (4, 6)))}
MEASURED = {"square_plus_one": ((4,),), "per_device_sum": ((4,),), "per_device_matmul": ((2, 3), (3, 2))}
CHECKS = {"square_plus_one": _check_square_plus_one, "per_device_sum": _check_per_device_sum,
          "per_device_matmul": _check_per_device_matmul}


def _arrays(draw, rng, devices, shapes):
    return [draw(rng, (devices, *shape)) for shape in shapes]


def _statements(student, rng, devices, name):
    CHECKS[name](student, *_arrays(_normal, rng, devices, SHAPES[name][0]))


@pytest.mark.devices(1, 2, 4)
def test_square_plus_one(student, rng, devices):
    _statements(student, rng, devices, "square_plus_one")


@pytest.mark.devices(1, 2, 4)
def test_per_device_sum(student, rng, devices):
    _statements(student, rng, devices, "per_device_sum")


@pytest.mark.devices(1, 2, 4)
def test_per_device_matmul(student, rng, devices):
    _statements(student, rng, devices, "per_device_matmul")


def test_other_shapes(student, rng, devices):
    """Other shapes, and int32 numbers, whose dtype the results keep."""
    for name in FUNCTIONS:
        CHECKS[name](student, *_arrays(_ints, rng, devices, SHAPES[name][1]))


def _wrong_inputs(name, n, leads):
    """(description, argument shapes, the leading axis at fault) for inputs that do not fit n devices.

    Other dimensions (6, 10) never equal a leading axis tried, so naming a number means naming that axis.
    """
    for lead in leads:
        if name == "per_device_matmul":
            yield f"X ({lead}, 6, 10) and Y ({lead}, 10, 6)", [(lead, 6, 10), (lead, 10, 6)], lead
        else:
            yield f"x ({lead}, 6)", [(lead, 6)], lead


def _expect_rejected(student, rng, devices, name, cases):
    plural = "s" if devices > 1 else ""
    for shapes_text, shapes, lead in cases:
        args = [_normal(rng, s) for s in shapes]
        if lead < devices:
            why = (f"pmap would quietly run on {lead} of the {devices} devices; compare the leading axis "
                   "with jax.device_count() and name both numbers")
        else:
            why = f"the leading axis must equal the device count; name both {lead} and {devices}"
        expect_raises(lambda: student.call(f"basics.{name}", *args), "ValueError",
                      f"{name} with {shapes_text} on {devices} device{plural}", mentions=(lead, devices), why=why,
                      facts=[d for s in shapes for d in s])


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_rejects_wrong_leading_axis(student, rng, devices, name):
    """One more row than devices: the statement's example."""
    _expect_rejected(student, rng, devices, name, _wrong_inputs(name, devices, [devices + 1]))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_rejects_other_leading_axes(student, rng, devices, name):
    """2n (pmap's squeeze error), n - 1 (no error: pmap runs on fewer devices), and X and Y that disagree."""
    n = devices
    cases = list(_wrong_inputs(name, n, sorted({2 * n} | ({n - 1} if n > 1 else set()))))
    if name == "per_device_matmul":
        cases.append((f"X ({n}, 6, 10) and Y ({n + 1}, 10, 6)", [(n, 6, 10), (n + 1, 10, 6)], n + 1))
    _expect_rejected(student, rng, devices, name, cases)


def _inputs(rng, devices):
    return {name: _arrays(_normal, rng, devices, shapes) for name, shapes in MEASURED.items()}


REFERENCES = {"square_plus_one": lambda x: x.astype(np.float64) ** 2 + 1,
              "per_device_sum": lambda x: x.astype(np.float64).reshape(len(x), -1).sum(axis=1),
              "per_device_matmul": lambda X, Y: np.matmul(X.astype(np.float64), Y)}


@pytest.mark.devices(1, 2, 4)
def test_results_live_on_every_device(student, rng, devices):
    for name, args in _inputs(rng, devices).items():
        got = student.probe("probes_basics.rows_on_devices", f"basics.{name}", *args)
        if got["type"] != "jax.Array":
            raise AssertionError(f"{name} returned a {got['type']}, expected the jax.Array that jax.pmap "
                                 "returns (its rows live on the devices; a NumPy copy lives on none)")
        if got["on"] != devices:
            raise AssertionError(f"{name}'s result lives on {got['on']} device(s), expected one row on each of "
                                 f"the {devices}: did you use jax.vmap (one device) instead of jax.pmap?")


def _expect_a_pmap(student, devices, name, args, measured):
    try:
        program = student.program(f"basics.{name}", *args, expect=REFERENCES[name], atol=1e-4, asks=Asks("jax.pmap"),
                                  what=name if measured else f"{name} on {' and '.join(_shape(a) for a in args)}")
    except StudentFailure as failure:
        if failure.kind != "raised":
            raise
        raise AssertionError(f"{name} cannot be compiled with jax.jit, which the grader uses to read its program: "
                             f"keep to jax.numpy inside and checks of shapes outside ({failure.message})") from None
    work.expect_share_of_work(program, program.what, "compute inside the pmapped function, so that every device works "
                              "on its own row", devices)


def _shape(a) -> str:
    return f"{a.dtype}[{','.join(map(str, a.shape))}]"


@pytest.mark.devices(2, 4, 8)
def test_each_function_runs_a_pmap(student, rng, devices):
    """Read from the compiled program, on the test's own inputs, then on every shape the value tests try at this
    device count; not on one device, where a pmap compiles to the same program as the plain function and nothing
    tells them apart."""
    for name, args in _inputs(rng, devices).items():
        _expect_a_pmap(student, devices, name, args, True)
        visible, others = SHAPES[name]
        if devices in VISIBLE_COUNTS:
            _expect_a_pmap(student, devices, name, _arrays(_normal, rng, devices, visible), False)
        _expect_a_pmap(student, devices, name, _arrays(_ints, rng, devices, others), False)
