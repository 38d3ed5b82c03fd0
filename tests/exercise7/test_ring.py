"""Suite for task ring: ring_shift moves blocks around the ring, ring_allreduce is made of ppermutes.

Both are per-device functions; probes_ring.py wraps them in jax.pmap in the worker; the structural
tests get the compiled HLO of one program from student.program, whose values (row i = device i) the
grader checks first on the test's inputs and on inputs of its own.
Visible tests run shifts of 1 and -1 and one block shape at 1, 2 and 4 devices; the hidden ones
(course.yaml) try longer shifts, another block shape and every count, and read the compiled programs.
"""

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo


def _whose_block(got_row, x) -> int | None:
    """Which device's input block a device ended up with, if any."""
    return next((k for k in range(len(x)) if np.array_equal(got_row, x[k])), None)


def check_shift(got, x, shift: int, call: str) -> None:
    """Device j must hold device (j - shift) mod n's block, bit for bit (ppermute copies, never computes)."""
    n = len(x)
    got = expect_shape(got, x.shape, call)
    holders = [_whose_block(got[j], x) for j in range(n)]
    if holders == [(j - shift) % n for j in range(n)]:
        return
    empty = [j for j in range(n) if holders[j] is None and not got[j].any()]
    for m in range(1, n):
        if empty == list(range(m, n)) and holders[:m] == [(j - shift) % m for j in range(m)]:
            raise AssertionError(f"{call}: your ring wraps around after {m} devices, but there are {n}: devices "
                                 f"{m} to {n - 1} received nothing (zeros). Build perm from lax.axis_size(axis_name)")
    if empty:
        raise AssertionError(f"{call}: device {empty[0]} received nothing (zeros) on {n} devices; ppermute leaves "
                             "zeros on a device no pair sends to: every device must send and receive one block")
    j = next(j for j in range(n) if holders[j] != (j - shift) % n)
    if holders[j] == (j + shift) % n:
        raise AssertionError(f"{call} moves blocks the wrong way: device {j} holds device {holders[j]}'s block, "
                             f"expected device {(j - shift) % n}'s; device i's block must land on device (i + shift) mod n")
    held = f"device {holders[j]}'s block" if holders[j] is not None else "a block that no device had"
    raise AssertionError(f"{call}: on {n} devices device {j} holds {held}, expected device {(j - shift) % n}'s "
                         "(device i's block lands on device (i + shift) mod n)")


def expect_ppermute_only(text: str, name: str) -> int:
    """How many ppermutes the student's program runs, failing on any other collective of theirs."""
    for c in hlo.select(text, by_student=True):
        if c.op != "collective-permute":
            raise AssertionError(f"{name} runs an {c.op} (from lax.{c.origin}): around a ring, data moves only "
                                 "with lax.ppermute (ring_shift), one neighbour at a time")
    return hlo.count(text, "collective-permute", by_student=True)


def _check_ring_shift(student, rng, devices, shift):
    x = rng.normal(size=(devices, 5)).astype(np.float32)
    got = student.probe("probes_ring.values", "ring_shift", x, shift=shift)
    check_shift(got, x, shift, f"ring_shift(x, axis_name, shift={shift})")


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("shift", [1, -1])
def test_ring_shift_moves_each_block(student, rng, devices, shift):
    _check_ring_shift(student, rng, devices, shift)


@pytest.mark.parametrize("shift", [3, -10])
def test_ring_shift_longer_shifts(student, rng, devices, shift):
    _check_ring_shift(student, rng, devices, shift)


def test_ring_shift_default_is_one_ppermute(student, rng, devices):
    x = rng.normal(size=(devices, 2, 3)).astype(np.float32)
    out = student.program("probes_ring.ring_shift", x, expect=lambda v: np.roll(v, 1, axis=0),
                          what="ring_shift(x, axis_name)")
    feedback.communication(out.hlo, needed=f"1 collective-permute (ppermute) of {x[0].nbytes} bytes per device"
                           if devices > 1 else "nothing (one device has no neighbour)")
    permutes = expect_ppermute_only(out.hlo, "ring_shift")
    if permutes is None or permutes > 1 or (permutes == 0 and devices > 1):
        runs = "an unknown number of" if permutes is None else permutes
        raise AssertionError(f"ring_shift runs {runs} ppermutes on {devices} devices, expected exactly one: "
                             "every device sends its block to its neighbour at once")


def _check_ring_allreduce(student, rng, devices, shape):
    x = rng.normal(size=(devices, *shape))
    what = f"ring_allreduce on {devices} devices (row i is what device i returned)"
    got = expect_shape(student.probe("probes_ring.values", "ring_allreduce", x.astype(np.float32)), x.shape, what)
    if devices > 1 and np.allclose(got, x.sum(axis=0) + x, rtol=1e-4, atol=1e-5):
        raise AssertionError(f"ring_allreduce on {devices} devices adds every device's own block twice: after n - 1 "
                             "shifts each block has visited every device once; an n-th shift brings it home again")
    parts = np.broadcast_to(x[:, None], (devices, *x.shape))  # device k's block, as seen on every device
    expect_close(got, np.broadcast_to(x.sum(axis=0), x.shape), what=what, devices=devices, parts=parts,
                 device_axis=True)


@pytest.mark.devices(1, 2, 4)
def test_ring_allreduce_equals_psum(student, rng, devices):
    _check_ring_allreduce(student, rng, devices, (7,))


def test_ring_allreduce_block_of_another_shape(student, rng, devices):
    _check_ring_allreduce(student, rng, devices, (3, 2))


def test_ring_allreduce_uses_ppermute_only(student, rng, devices):
    x = rng.normal(size=(devices, 6)).astype(np.float32)
    out = student.program("probes_ring.ring_allreduce", x,
                          expect=lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape),
                          what="ring_allreduce(x, axis_name)")
    feedback.communication(out.hlo, needed=f"{devices - 1} collective-permute (ppermute) of {x[0].nbytes} bytes "
                           "per device (n - 1 shifts of the block), and no psum")
    expect_ppermute_only(out.hlo, "ring_allreduce")
