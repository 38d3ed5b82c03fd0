"""Suite for task ring: ring_shift moves blocks around the ring, ring_allreduce is made of ppermutes.

Both are per-device functions, wrapped in jax.pmap in the worker: by ring_values.py for the values
(row i = device i), by probes_ring.py for the structural tests, which get the compiled HLO of one
program from student.program, whose values the grader checks first on the test's inputs and on
inputs of its own.
Visible tests run shifts of 1 and -1 and one block shape at 1, 2 and 4 devices; the hidden ones
(course.yaml) try longer shifts, int32 blocks of another shape and every count, and read the compiled
programs. A wrong ring sum is told by what the engine measures with one device's block non-zero at a
time (grader.suite.differences: whose block each device leaves out or counts more than once); a ring
sum has no psum to advise (the task forbids it), so it is told as facts.
"""

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo, rings
from grader.suite.differences import Probe
from grader.suite.jax_errors import PERM_OFF_THE_RING

# Inside this task nothing of JAX's but a ppermute's perm is indexed by the student's numbers.
JAX_ERRORS = (PERM_OFF_THE_RING,)


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
            raise AssertionError(f"{name} runs {c.a} (from lax.{c.origin}): around a ring, data moves only "
                                 "with lax.ppermute (ring_shift), one neighbour at a time")
    return hlo.count(text, "collective-permute", by_student=True)


def _check_ring_shift(student, rng, devices, shift):
    x = rng.normal(size=(devices, *SHIFTED)).astype(np.float32)
    got = student.probe("ring_values.ring_shift", x, shift=shift)
    check_shift(got, x, shift, f"ring_shift(x, axis_name, shift={shift})")


# What the value tests run, at 1, 2 and 4 devices (VISIBLE_COUNTS) and at every count, and on a ring of one device
# fewer than the machine has (SOME_COUNTS): the structural tests read the program at each of these too, after their
# own, so a program honest only where it is read earns nothing there.
VISIBLE_COUNTS, SOME_COUNTS = (1, 2, 4), (4, 8)  # as the markers say (literal: test_course.py reads them)
SHIFTED, VISIBLE_SHIFTS, OTHER_SHIFTS = (5,), (1, -1), (3, -10)  # ring_shift's block, and its shifts
SUMMED, OTHER_SUMMED, SOME_SUMMED = (7,), ((3, 2), np.int32), (5,)  # ring_allreduce's blocks


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("shift", VISIBLE_SHIFTS)
def test_ring_shift_moves_each_block(student, rng, devices, shift):
    _check_ring_shift(student, rng, devices, shift)


@pytest.mark.parametrize("shift", OTHER_SHIFTS)
def test_ring_shift_longer_shifts(student, rng, devices, shift):
    _check_ring_shift(student, rng, devices, shift)


def _on(n: int, devices: int) -> str:
    """How a message names a ring of ``n`` of the case's ``devices`` devices, where it is not all of them."""
    return "" if n == devices else f" on a ring of {n} of the {devices} devices"


def _expect_one_ppermute(student, x, shift, measured, devices):
    """One program of ring_shift: one ppermute of each device's own block. ``x``'s rows are the ring's devices."""
    n = len(x)
    call = "ring_shift(x, axis_name)" + ("" if measured else f" with blocks of shape {x.shape[1:]} and shift={shift}"
                                         + _on(n, devices))
    out = student.program("probes_ring.ring_shift", x, shift=shift, expect=lambda v: np.roll(v, shift, axis=0),
                          what=call, devices=n)
    feedback.communication(out)
    rings.expect_own_block(out, call, f"on {n} devices")
    permutes = expect_ppermute_only(out.hlo, call)
    if permutes is None or permutes != 1:
        runs = "an unknown number of" if permutes is None else permutes
        raise AssertionError(f"{call} runs {runs} ppermutes on {n} devices, expected exactly one: "
                             "every device sends its block to its neighbour at once")


@pytest.mark.devices(2, 4, 8)
def test_ring_shift_default_is_one_ppermute(student, rng, devices):
    """Read on blocks of its own, then on every ring, block and shift the value tests try at this device count (not
    a shift by a multiple of the ring's length: nothing moves)."""
    _expect_one_ppermute(student, rng.normal(size=(devices, 2, 3)).astype(np.float32), 1, True, devices)
    tried = [*((devices, s) for s in (*(VISIBLE_SHIFTS if devices in VISIBLE_COUNTS else ()), *OTHER_SHIFTS)),
             *(((devices - 1, 1),) if devices in SOME_COUNTS else ())]
    for n, shift in tried:
        if shift % n:
            _expect_one_ppermute(student, rng.normal(size=(n, *SHIFTED)).astype(np.float32), shift, False, devices)


DTYPE = "int32 blocks add up to int32 sums: accumulate in the input's dtype (start from x, add what arrives)"


def ring_sum(x):
    """What every device holds after an all-reduce of x (row i = device i's block)."""
    return np.broadcast_to(x.astype(np.float64).sum(axis=0), x.shape)


def _check_ring_allreduce(student, rng, devices, shape, dtype=np.float32):
    x = rng.normal(size=(devices, *shape)) if dtype == np.float32 else rng.integers(-9, 10, size=(devices, *shape))
    x = x.astype(dtype)
    what = f"ring_allreduce on {devices} devices (row i is what device i returned)"
    got = expect_shape(student.probe("ring_values.ring_allreduce", x), x.shape, what)
    x64 = x.astype(np.float64)
    expect_close(got, np.broadcast_to(x64.sum(axis=0), x.shape), what=what, dtype=dtype, devices=devices,
                 device_axis=True, causes={"dtype": DTYPE},
                 probe=Probe.per_device(ring_sum, x, lambda v: student.probe("ring_values.ring_allreduce", v)))


@pytest.mark.devices(1, 2, 4)
def test_ring_allreduce_equals_psum(student, rng, devices):
    _check_ring_allreduce(student, rng, devices, SUMMED)


def test_ring_allreduce_block_of_another_shape(student, rng, devices):
    """int32 blocks of another shape: the sum keeps their dtype, as lax.psum's does."""
    _check_ring_allreduce(student, rng, devices, *OTHER_SUMMED)


@pytest.mark.devices(4, 8)
def test_a_ring_of_some_of_the_devices(student, rng, devices):
    """x with one row fewer than the machine has devices: jax.pmap maps over that many, so the ring is as long as
    x; a perm built from jax.device_count() names a device the ring does not have."""
    _check_ring_shift(student, rng, devices - 1, 1)
    _check_ring_allreduce(student, rng, devices - 1, SOME_SUMMED)


def _expect_a_ring(student, x, measured, devices):
    """One program of ring_allreduce: ppermutes only, each block once around the ring of ``len(x)`` devices."""
    n, block = len(x), x[0].nbytes
    call = "ring_allreduce(x, axis_name)" + ("" if measured else f" with {x.dtype} blocks of shape {x.shape[1:]}"
                                             + _on(n, devices))
    where = f"on {n} devices"
    out = student.program("probes_ring.ring_allreduce", x,
                          expect=lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape), what=call,
                          devices=n)
    feedback.communication(out)
    rings.expect_own_block(out, call, where)
    expect_ppermute_only(out.hlo, call)
    rings.expect_sent_as_is(out.hlo, call, x.dtype, where)
    sent, least = hlo.bytes_moved(out.hlo, "collective-permute", by_student=True), 2 * (n - 1) * block // n
    if sent is None:
        raise AssertionError(f"{call} runs a ppermute in a loop whose length is unknown when it compiles "
                             "(lax.while_loop?), so what it sends cannot be counted: use a Python for loop or "
                             "lax.fori_loop(1, n, ...)")
    if sent < least:
        raise AssertionError(f"{where} the ppermutes the answer of {call} depends on send {sent} bytes per device; a "
                             f"sum of every device's block of {block} bytes that travels around the ring sends at least "
                             f"2(n - 1)/n of the block, {least} bytes: the blocks that arrive must be what you add up")
    if n > 2:  # on two devices every schedule is one ppermute of one block: nothing tells a ring apart
        rings.expect_ring(out.hlo, call, "block", where)
    most = max((n - 1) * block, 2 * (n - 1) * -(-x[0].size // n) * x.itemsize)  # the simple ring, or the optimal
    if sent > most:
        raise AssertionError(f"{where} each device sends {sent} bytes through the ppermutes the answer of {call} "
                             f"needs, more than the n - 1 blocks of {block} bytes a ring sends, or the 2(n - 1) chunks "
                             f"of the bandwidth-optimal one ({most} at most): each step passes on the block that "
                             "arrived, so every block travels once around the ring, not once for each device it must "
                             "reach")


# On one device a ring has no neighbour: XLA drops every collective, so the program cannot tell one from another;
# on two, every schedule is one ppermute of one block (direct sends, recursive doubling, the ring): only rings of 3 or
# more can tell the ring apart (round 50), but on two the ppermutes and their bytes are still what the answer needs.
@pytest.mark.devices(2, 4, 8)
def test_ring_allreduce_uses_ppermute_only(student, rng, devices):
    """Read on blocks of its own (from 4 devices on), then on every ring and block the value tests try at this
    device count."""
    if devices > 2:
        _expect_a_ring(student, rng.normal(size=(devices, 6)).astype(np.float32), True, devices)
    tried = [*((((devices, *SUMMED), np.float32),) if devices in VISIBLE_COUNTS else ()),
             ((devices, *OTHER_SUMMED[0]), OTHER_SUMMED[1]),
             *((((devices - 1, *SOME_SUMMED), np.float32),) if devices in SOME_COUNTS else ())]
    for shape, dtype in tried:
        x = rng.normal(size=shape) if dtype == np.float32 else rng.integers(-9, 10, size=shape)
        _expect_a_ring(student, x.astype(dtype), False, devices)
