"""Suite for task dot: distributed_dot(x, y) on any length, with one psum and no gather.

The visible test runs two lengths at 1, 2 and 4 devices; the hidden ones (course.yaml) try a length of
1, lengths shorter than the device count (one of int32 vectors, whose dtype the result keeps) and a long
one at every count, and read the compiled program.
"""

import re

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.differences import Probe, Split
from grader.suite.jax_errors import Rule

# A pmap of blocks with no elements fails to compile, with XLA's words only. In this task a device's block is
# empty only when the vectors, shorter than the device count, were cut down to a multiple of it.
JAX_ERRORS = (Rule("empty blocks", re.compile(r"manual_computation_body.*tensor<\d+x0x", re.S),
                   lambda match, situation: "every device's block is empty: a vector shorter than the device count, "
                                            "cut down to a multiple of it, leaves nothing; pad both vectors with zeros "
                                            "up to a multiple of the device count instead"),)


# What a pattern of the values means in this task (grader.suite.value_patterns): the facts are the engine's.
CAUSES = {
    "n_times": "after one lax.psum every device already holds the whole dot product; adding the devices' results "
               "up again (a sum over the pmap's output, or a second psum) counts it once per device: return out[0]",
    "1/n": "the devices' partial dot products were averaged (lax.pmean, or a division by the device count) where "
           "the task adds them up with lax.psum",
    "dtype": "a dot product of int32 vectors is int32: keep every step in x.dtype (zeros of x.dtype to pad with, as "
             "jnp.pad gives; lax.psum to add up, where lax.pmean's division makes floats; no conversion)",
}


def _vectors(rng, length, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, size=length).astype(dtype), rng.integers(-9, 10, size=length).astype(dtype)
    return rng.normal(size=length).astype(dtype), rng.normal(size=length).astype(dtype)


# What a wrong padding computes instead of the dot product (of x, y, the padding's length and the elements
# kept), and what the message says of it (given the length, the padding's, the elements kept, the devices).
PADDINGS = (
    (lambda x, y, pad, used: np.dot(x, y) + pad,
     lambda length, pad, used, n: f"off by what padding with {pad} ones adds to the dot product; pad with zeros, "
                                  "which add nothing"),
    (lambda x, y, pad, used: np.dot(x, y) + pad * x[-1] * y[-1],
     lambda length, pad, used, n: f"off by what padding with {pad} copies of the last element adds to the dot "
                                  "product; pad with zeros, which add nothing"),
    (lambda x, y, pad, used: np.dot(x[:used], y[:used]) if used else np.nan,
     lambda length, pad, used, n: f"the dot product of the first {used} elements only: {length} is not a multiple "
                                  f"of {n}, and the last {length - used} were cut off; pad both vectors with zeros "
                                  f"to a multiple of {n} instead"),
)


def _expect_no_padding_mistake(student, rng, what, devices, length, x64, y64, got) -> None:
    """AssertionError naming the padding mistake whose value ``got`` is, if it is that value again on other
    vectors of the same length (once can be a coincidence: an int32 dot product off by exactly 1)."""
    pad, used = -length % devices, length // devices * devices
    def told(value, x, y):  # a padding's value, where it differs from n times the answer (length 1: ones' copies)
        return not np.isclose(value, devices * np.dot(x, y), rtol=1e-4, atol=1e-4)

    matches = [i for i, (value, _) in enumerate(PADDINGS)
               if np.isclose(got, value(x64, y64, pad, used), rtol=1e-4, atol=1e-4)
               and told(value(x64, y64, pad, used), x64, y64)]
    if not matches:
        return
    x2, y2 = (v.astype(np.float64) for v in _vectors(rng, length, np.float32))
    again = student.call("dot.distributed_dot", x2.astype(np.float32), y2.astype(np.float32))
    for i in matches:
        value, say = PADDINGS[i]
        if np.isclose(again, value(x2, y2, pad, used), rtol=1e-4, atol=1e-4):
            raise AssertionError(f"{what} on {devices} devices returned {float(got):.6g}, expected "
                                 f"{np.dot(x64, y64):.6g}: {say(length, pad, used, devices)}")


def _check_dot(student, rng, devices, length, dtype=np.float32):
    """JAX's errors (a reshape that does not divide, a leading axis that is not the device count) are
    told as the mistake by the grader itself (grader.suite.jax_errors)."""
    x, y = _vectors(rng, length, dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    what = f"distributed_dot(x, y) with len {length}" + ("" if dtype == np.float32 else f" and dtype {np.dtype(dtype)}")
    got = expect_shape(student.call("dot.distributed_dot", x, y), (), what)
    pad = -length % devices
    answer = np.dot(x64, y64)
    if pad and not np.isclose(got, answer, rtol=1e-4, atol=1e-4):
        _expect_no_padding_mistake(student, rng, what, devices, length, x64, y64, got)
    parts = np.pad(x64 * y64, (0, pad)).reshape(devices, -1).sum(axis=1)  # each device's partial dot
    probe = Probe(reference=lambda a, b: np.dot(a.astype(np.float64), b), inputs=(x, y),
                  splits=(Split(0, 0, devices, "x"), Split(1, 0, devices, "y")),
                  rerun=lambda a, b: student.call("dot.distributed_dot", a, b))
    expect_close(got, answer, what=what, rtol=1e-4, atol=1e-4, dtype=dtype, devices=devices, parts=parts,
                 causes=CAUSES, probe=probe)


# The vectors the value tests try (length, dtype), at 1, 2 and 4 devices and at every count: the structural test
# reads the program at each of them too, so a program honest only where it is read earns nothing there.
VISIBLE, VISIBLE_COUNTS = ((5, np.float32), (37, np.float32)), (1, 2, 4)  # the counts as the markers say
OTHERS = ((1, np.float32), (3, np.int32), (1001, np.float32))
MEASURED = 405  # a device's work is then its slice's, not a padding's or a loop's (round 47: a slice padded to 8s)


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("length", [length for length, _ in VISIBLE])
def test_dot_matches_numpy(student, rng, devices, length):
    _check_dot(student, rng, devices, length)


@pytest.mark.parametrize("length, dtype", OTHERS)
def test_dot_other_lengths(student, rng, devices, length, dtype):
    _check_dot(student, rng, devices, length, dtype)


def _expect_one_all_reduce(student, rng, devices, length, dtype):
    """The program's structure at one length; its work is counted from MEASURED elements on, where a device's
    share of it is its slice's, and below that the share of x and y each device receives (round 58: the whole
    vectors on every device and a psum of dot / n, below 405 elements only)."""
    x, y = _vectors(rng, length, dtype)
    name = "distributed_dot" if length == MEASURED else f"distributed_dot with len {length}"
    program = student.program("dot.distributed_dot", x, y, expect=lambda a, b: np.dot(a.astype(np.float64), b),
                              what=name, rtol=1e-4, atol=1e-4, asks=Asks("jax.pmap"), counts_work=length >= MEASURED)
    text = program.hlo
    feedback.communication(program, by_student=False)
    # (not one XLA adds to move the inputs every device already holds whole, as they are: a padded copy's slices)
    gathered = [c for c in hlo.select(text, "all-gather") if c.by_student or c.computed]
    if gathered:  # what is gathered, told by its bytes: slices of the vectors, or less (partial results)
        sent, piece = meshes.per_run(gathered), -(-length // devices) * x.itemsize
        what = ("slices of the vectors onto every device" if sent >= piece else
                f"less than a slice of a vector ({piece} bytes): partial results, added up on every device")
        raise AssertionError(f"{name} gathers {meshes.per_run_text(gathered)} per device, {what}; each "
                             "device only needs its own slices, and one lax.psum adds the partial dot products")
    reduces = hlo.select(text, "all-reduce", by_student=True)
    others = hlo.select(text, by_student=True)
    instead = (f"; it communicates with {' and '.join(sorted({c.op + 's' for c in others}))} instead" if others
               else ": no collective of its own adds up the devices' partial dot products"
               + hlo.idle_note(text, "all-reduce"))
    assert reduces, (f"{name} runs no all-reduce of its own{instead}. jax.pmap the local dot and finish "
                     "with one lax.psum over the axis name")
    runs = hlo.count(text, "all-reduce", by_student=True)  # executions: a psum in a loop runs each time
    assert runs == 1, (f"{name} runs {'an unknown number of' if runs is None else runs} all-reduce "
                       "operations of its own, expected exactly 1: take the local dot on each device, then one "
                       "lax.psum")
    numbers = reduces[0].bytes // x.itemsize
    assert numbers == 1, (f"{name}'s psum carries {numbers} numbers per device, expected 1: finish the "
                          "local dot (jnp.dot of the two slices) before the psum, so only one number travels")
    share = "each device should multiply only its own slices, and the psum adds the devices' dot products"
    if length >= MEASURED:
        work.expect_share_of_work(program, name, share, devices)
    else:  # a device's few products are its padding's; what it receives of x and y still tells, against its slice
        work.expect_share_of_inputs(program, name, share, f"on {devices} devices",
                                    given=-(-length // devices) / length)
    work.expect_collectives_of_reference(program, name, "the one psum adds up the devices' partial dot "
                                         "products, and nothing else needs to move", devices)


@pytest.mark.devices(2, 4, 8)  # on one device nothing is split: no structure to measure
def test_dot_uses_one_all_reduce(student, rng, devices):
    """Read at MEASURED elements, then at every length the value tests try at this device count."""
    for length, dtype in ((MEASURED, np.float32), *(VISIBLE if devices in VISIBLE_COUNTS else ()), *OTHERS):
        _expect_one_all_reduce(student, rng, devices, length, dtype)
