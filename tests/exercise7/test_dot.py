"""Suite for task dot: distributed_dot(x, y) on any length, with one psum and no gather.

The visible test runs two lengths at 1, 2 and 4 devices; the hidden ones (course.yaml) try a length of
1, lengths shorter than the device count and a long one at every count, and read the compiled program.
"""

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo


def _check_dot(student, rng, devices, length):
    """JAX's errors (a reshape that does not divide, a leading axis that is not the device count) are
    told as the mistake by the grader itself (grader.suite.jax_errors)."""
    x, y = rng.normal(size=length), rng.normal(size=length)
    what = f"distributed_dot(x, y) with len {length}"
    got = expect_shape(student.call("dot.distributed_dot", x.astype(np.float32), y.astype(np.float32)), (), what)
    pad = -length % devices
    right = np.isclose(got, np.dot(x, y), rtol=1e-4, atol=1e-4)
    for value, padding in ((1.0, "ones"), (x[-1] * y[-1], "copies of the last element")):
        if pad and not right and np.isclose(got, np.dot(x, y) + pad * value, rtol=1e-4, atol=1e-4):
            raise AssertionError(f"{what} on {devices} devices returned {float(got):.6g}, expected "
                                 f"{np.dot(x, y):.6g}: off by what padding with {pad} {padding} adds to the dot "
                                 "product; pad with zeros, which add nothing")
    parts = np.pad(x * y, (0, pad)).reshape(devices, -1).sum(axis=1)  # each device's partial dot
    expect_close(got, np.dot(x, y), what=what, rtol=1e-4, atol=1e-4, devices=devices, parts=parts)


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("length", [5, 37])
def test_dot_matches_numpy(student, rng, devices, length):
    _check_dot(student, rng, devices, length)


@pytest.mark.parametrize("length", [1, 3, 1001])
def test_dot_other_lengths(student, rng, devices, length):
    _check_dot(student, rng, devices, length)


def test_dot_uses_one_all_reduce(student, rng, devices):
    length = 45
    x = rng.normal(size=length).astype(np.float32)
    program = student.program("dot.distributed_dot", x, x, expect=lambda a, b: np.dot(a.astype(np.float64), b),
                              rtol=1e-4, atol=1e-4)
    text = program.hlo
    feedback.communication(text, needed="1 all-reduce (your psum) of 4 bytes per device, and no all-gather",
                           by_student=False)
    gathers = hlo.count(text, "all-gather")
    assert gathers == 0, (f"distributed_dot gathers whole vectors onto every device ({gathers} all-gather); "
                          "each device only needs its own slices and one psum of the partial dot products")
    reduces = hlo.select(text, "all-reduce", by_student=True)
    assert reduces, ("distributed_dot runs no all-reduce of its own: the partial dot products were added up on "
                     "one device (a Python loop over the slices, or jnp.dot of the whole vectors), not by the "
                     "devices; jax.pmap the local dot and finish with one lax.psum over the axis name")
    assert len(reduces) == 1, (f"distributed_dot runs {len(reduces)} all-reduce operations of its own, expected "
                               "exactly 1: take the local dot on each device, then one lax.psum")
    numbers = reduces[0].bytes // 4
    assert numbers == 1, (f"distributed_dot's psum carries {numbers} numbers per device, expected 1: finish the "
                          "local dot (jnp.dot of the two slices) before the psum, so only one number travels")
    share, done = -(-length // devices), hlo.work(text)
    assert done is not None and done <= share, (
        f"in distributed_dot one device computes on {hlo.numbers(done)} of a vector of {length}; on {devices} "
        f"devices each should multiply only its own slices, at most {share} pairs, and the psum adds the devices' "
        "dot products")
