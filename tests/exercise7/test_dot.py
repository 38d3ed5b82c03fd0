"""Hidden suite for task dot: distributed_dot(x, y) on any length, with one psum and no gather."""

import numpy as np
import pytest

from grader.suite import StudentFailure, expect_close, hlo


def advice(message: str, length: int, devices: int) -> str | None:
    """What a failing distributed_dot most likely got wrong, from JAX's error."""
    if "reshape" in message and length % devices:
        return "pad x and y with zeros to a multiple of the device count before reshaping"
    if "squeeze out" in message or "evenly divide" in message:
        return (f"the leading axis you give jax.pmap must be the device count ({devices} here): use "
                "jax.device_count(), never a fixed number")
    return None


@pytest.mark.parametrize("length", [1, 3, 37, 1001])
def test_dot_matches_numpy(student, rng, devices, length):
    x, y = rng.normal(size=length), rng.normal(size=length)
    try:
        got = student.call("dot.distributed_dot", x.astype(np.float32), y.astype(np.float32))
    except StudentFailure as exc:
        fix = advice(exc.message, length, devices)
        if fix is None:
            raise
        raise AssertionError(f"distributed_dot fails for len {length} on {devices} devices: {fix} "
                             f"({exc.message})") from None
    expect_close(got, np.dot(x, y), what=f"distributed_dot(x, y) with len {length}", rtol=1e-4, atol=1e-4)


def test_dot_uses_one_all_reduce(student, rng, devices):
    x = rng.normal(size=45).astype(np.float32)
    program = student.program("dot.distributed_dot", x, x)
    expect_close(program.value, np.dot(x, x), what="distributed_dot(x, x) compiled with jax.jit", rtol=1e-4, atol=1e-4)
    text = program.hlo
    gathers = hlo.count(text, "all-gather")
    assert gathers == 0, (f"distributed_dot gathers whole vectors onto every device ({gathers} all-gather); "
                          "each device only needs its own slices and one psum of the partial dot products")
    reduces = hlo.select(text, "all-reduce", by_student=True)
    assert len(reduces) == 1, (f"distributed_dot runs {len(reduces)} all-reduce operations of its own, expected "
                               "exactly 1: take the local dot on each device, then one lax.psum")
    numbers = reduces[0].bytes // 4
    assert numbers == 1, (f"distributed_dot's psum carries {numbers} numbers per device, expected 1: finish the "
                          "local dot (jnp.dot of the two slices) before the psum, so only one number travels")
