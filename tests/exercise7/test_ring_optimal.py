"""Suite for the extra-credit task ring_optimal: the reduce-scatter + all-gather ring.

The sum must equal psum, and the bytes each device sends through the ppermutes the answer depends
on, read from the compiled program with loop trip counts, must stay within 2(n - 1) chunks of
ceil(size / n) elements and reach 2(n - 1) chunks of size // n, on a size no device count divides
and one they all divide. The visible test runs one block at 4 devices; the hidden ones (course.yaml)
run int32 blocks of another shape at 4 and 8 devices, and count the bytes. The ppermutes must also be
a ring (grader.suite.rings): one route and its reverse, each step passing on what arrived, so recursive
halving and doubling, which send as few bytes, are not the ring the task teaches.
"""

import math

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo, rings
from grader.suite.differences import Probe
from grader.suite.jax_errors import PERM_OFF_THE_RING

# Inside this task nothing of JAX's but a ppermute's perm is indexed by the student's numbers.
JAX_ERRORS = (PERM_OFF_THE_RING,)

DTYPE = "int32 blocks add up to int32 sums: keep every chunk in the input's dtype (pad with zeros of x.dtype)"


def _one_finished_chunk_each(got, x) -> str | None:
    """The sentence for a result where every device holds the complete sum in exactly one chunk, a different one
    on each (what the reduce-scatter leaves), or None."""
    n, flat = len(x), x.reshape(len(x), -1)
    chunk = -(-flat.shape[1] // n)
    total, mine = flat.sum(axis=0), got.reshape(n, -1)
    finished = [[c for c in range(n) if np.allclose(mine[d, c * chunk:(c + 1) * chunk],
                                                    total[c * chunk:(c + 1) * chunk], rtol=1e-4, atol=1e-5)]
                for d in range(n)]
    if n < 2 or any(len(f) != 1 for f in finished) or len({f[0] for f in finished}) != n:
        return None
    return (f"on {n} devices holds the complete sum in one chunk per device only (device 0 in chunk {finished[0][0]}, "
            f"chunks of {chunk} elements), a different chunk on each, and its other chunks are not the sum. The "
            "reduce-scatter phase ends so; the all-gather phase then copies each finished chunk, unchanged, to every "
            "device")


def expect_sum(got, x, dtype=np.float32, rerun=None):
    what = f"ring_allreduce_optimal on {len(x)} devices (row i is what device i returned)"
    got = expect_shape(got, x.shape, what)
    x64 = x.astype(np.float64)
    said = _one_finished_chunk_each(got.astype(np.float64), x64)
    if said:
        raise AssertionError(f"ring_allreduce_optimal {said}")
    total = lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape)  # noqa: E731
    expect_close(got, total(x), what=what, dtype=dtype, devices=len(x), device_axis=True, causes={"dtype": DTYPE},
                 probe=rerun and Probe.per_device(total, x, rerun))


def run_optimal(student, x):
    def rerun(v):
        return student.probe("ring_values.ring_allreduce_optimal", v)
    expect_sum(rerun(x), x, x.dtype, rerun)


# The blocks the value tests sum, at 4 devices and at every count: the structural test reads the program on each
# of them too, so a program honest only where it is read earns nothing there.
VISIBLE_COUNTS, VISIBLE, OTHER = (4,), (13,), (4, 8)  # the counts as the marker says
LENGTHS = (1001, 1000)  # the structural test's own blocks: a length no device count divides, and one 1, 2, 4, 8 divide


def _visible(rng, devices):
    return rng.normal(size=(devices, *VISIBLE)).astype(np.float32)


def _other(rng, devices):
    return rng.integers(-9, 10, size=(devices, *OTHER)).astype(np.int32)


@pytest.mark.devices(4)
def test_optimal_equals_psum(student, rng, devices):
    run_optimal(student, _visible(rng, devices))


def test_optimal_block_of_another_shape(student, rng, devices):
    """int32 blocks of another shape: the sum keeps their dtype, as lax.psum's does."""
    run_optimal(student, _other(rng, devices))


def test_optimal_sends_2_n_minus_1_chunks(student, rng, devices):
    """Read on blocks of a length no device count divides and of one they all divide, then on every block the value
    tests sum at this device count: one fact, so a program that passes some of them earns nothing."""
    blocks = [rng.normal(size=(devices, size)).astype(np.float32) for size in LENGTHS]
    blocks += [*((_visible(rng, devices),) if devices in VISIBLE_COUNTS else ()), _other(rng, devices)]
    for i, x in enumerate(blocks):
        _expect_chunks(student, x, devices, i < len(LENGTHS))


def _expect_chunks(student, x, devices, measured):
    """One program of ring_allreduce_optimal: 2(n - 1) chunks of ceil(size / n) elements around the ring."""
    size, item = x[0].size, x.itemsize
    blocks = "" if measured else f" with {x.dtype} blocks of shape {x.shape[1:]}"
    call = "ring_allreduce_optimal" + blocks
    program = student.program("probes_ring.ring_allreduce_optimal", x,
                              expect=lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape),
                              what=f"ring_allreduce_optimal(x, axis_name){blocks}")
    text = program.hlo
    limit = 2 * (devices - 1) * _chunk_elements(text, devices, size) * item
    whole = (devices - 1) * size * item
    feedback.communication(program, needed=f"collective-permutes (ppermute) only, at most {limit} bytes per device "
                           f"in all: 2(n - 1) chunks of ceil({size} / n) numbers, against {whole} for n - 1 whole "
                           "blocks")
    rings.expect_own_block(program, program.what, f"on {devices} devices")
    for c in hlo.select(text, by_student=True):
        if c.op != "collective-permute":
            raise AssertionError(f"{call} runs {c.a} (from lax.{c.origin}): "
                                 "pass the chunks with ring_shift (lax.ppermute) alone")
    rings.expect_sent_as_is(text, call, x.dtype, f"on {devices} devices", "chunk")
    sent = hlo.bytes_moved(text, "collective-permute", by_student=True)
    if sent is None:
        raise AssertionError(f"{call} runs a ppermute in a loop whose length is not known when it "
                             "compiles (lax.while_loop?): use lax.fori_loop(0, n - 1, ...) so the steps can be counted")
    if sent > limit:
        raise AssertionError(f"on {devices} devices each device sends {sent} bytes to all-reduce a block of "
                             f"{size * item} bytes; the reduce-scatter + all-gather ring sends 2(n - 1) chunks of "
                             f"ceil(size / n) elements, {limit} bytes. {_steps(text, devices, size, sent, limit)}")
    least = 2 * (devices - 1) * (size // devices) * item
    if sent < least:
        raise AssertionError(f"on {devices} devices the ppermutes the answer of {call} depends on send "
                             f"{sent} bytes per device; the reduce-scatter + all-gather ring sends 2(n - 1) chunks of "
                             f"at least size // n = {size // devices} elements, {least} bytes: the chunks that arrive "
                             "must be what you add up and pass on")
    rings.expect_ring(text, call, "chunk", f"on {devices} devices")
    steps, ring = sum(c.times for c in hlo.select(text, "collective-permute", by_student=True)), 2 * (devices - 1)
    if steps % ring:  # round 58: the simple ring's n - 1 steps of whole blocks packed into 2(n - 1) chunks' bytes
        raise AssertionError(f"the ppermutes of {call} run {steps} times on {devices} devices; the reduce-scatter + "
                             f"all-gather ring runs 2(n - 1) = {ring} steps (n - 1 adding the chunks up, n - 1 passing "
                             "the finished ones on), and that many again for each further part of the block it is run "
                             "on")


def _chunk_elements(text: str, devices: int, size: int) -> int:
    """Elements one step of the ring sends: a chunk, ceil(size / n); in a ring run on parts of the block
    (grader.suite.rings.parts: each way's half of a ring both ways, round 35; the block's halves one way, round
    55), a chunk of each part, each part padded to n chunks of its own (63 + 63 of 1000 on 8 devices, where a
    chunk is 125)."""
    k = rings.parts(text) or 1
    return sum(math.ceil((size // k + (i < size % k)) / devices) for i in range(k))


def _steps(text: str, devices: int, size: int, sent: int, limit: int) -> str:
    """How the student's ppermutes come to more bytes, measured (round 35: "passing whole blocks" was said of a ring
    that passed chunks one step too often): a step that sends more than a chunk (of its part, in a ring run on parts
    of the block), else more steps than 2(n - 1) for each part."""
    sends = hlo.select(text, "collective-permute", by_student=True)
    steps, largest = sum(c.times for c in sends), max(c.bytes for c in sends)
    n, k = devices, rings.parts(text) or 1
    chunk = math.ceil(math.ceil(size / k) / n) * 4
    if largest >= size * 4:
        return f"A step of yours sends the whole block ({largest} bytes): pass one chunk of {chunk} bytes per step"
    if largest > chunk:
        of = f" of one of the ring's {k} parts" if k > 1 else ""
        return (f"A step of yours sends {largest} bytes, more than one chunk{of} ({chunk} bytes): pass one chunk per "
                "step")
    ring = 2 * (n - 1)
    rings_run = steps // ring
    if k == 1 and rings_run > 1 and steps == rings_run * ring and largest * rings_run <= chunk + 4 * rings_run:
        # round 55: the ring run on parts of the block, each padded to n chunks of its own, in loops (whose sends
        # start nothing the program can count as parts): the steps are the parts', the excess their padding
        return (f"Your ppermutes run {steps} times, {rings_run} rings of 2(n - 1) = {ring} steps on parts of the "
                f"block, each step {largest} bytes, 1/{rings_run} of a chunk ({chunk} bytes) with its padding: "
                f"padding each part to n chunks of its own sends {sent - limit} bytes more than 2(n - 1) chunks of the "
                "whole block. Pad the block once, to n chunks, and split those")
    ring_text = f"2(n - 1) = {ring}" + (f" on each of its {k} parts" if k > 1 else "")
    return (f"Each of your ppermutes sends at most a chunk ({largest} bytes; a chunk is {chunk}), but they run {steps} "
            f"times, where the ring runs {ring_text}: n - 1 steps adding the chunks up, n - 1 passing the finished "
            "ones on")
