"""Suite for task rings: an all-gather and a reduce-scatter built from ppermutes inside shard_map.

probes_programs.ring wraps the per-device functions in shard_map over the 'model' axis of a
('data', 'model') mesh, every device's result coming back in mesh order; student.program has a clean
worker compile and run it. Visible tests check the values on the squarest mesh at 1, 2 and 4 devices;
the hidden ones (course.yaml) try the other mesh shapes and another block shape, and count the
ppermutes of the compiled program and their bytes on every mesh and block shape a test compiles (a
program knows both while it is traced) and on one ring of every device.
"""

import functools

import numpy as np
import pytest

from grader.suite import explained, feedback, hlo, meshes, rings
from grader.suite.differences import Probe, Split
from grader.suite.jax_errors import empty_assertion_on

AXES = ("data", "model")
JAX_ERRORS = (empty_assertion_on(AXES),)  # an axis name the mesh lacks, told against its axes


def gathered(x, rows, cols):
    """What every device returns from an all-gather over 'model', in mesh order: its mesh row's blocks."""
    per_row = x.reshape(rows, cols * (len(x) // (rows * cols)), *x.shape[1:])
    return np.concatenate([per_row[i] for i in range(rows) for _ in range(cols)])


def scattered(x, rows, cols):
    """What every device returns from a reduce-scatter over 'model': the row's sum of its own chunk."""
    chunks = x.reshape(rows, cols, cols, -1, *x.shape[1:])  # [mesh row, device in it, chunk, ...]
    return chunks.sum(axis=1).reshape(-1, *x.shape[1:])


def _whose(block, blocks) -> int | None:
    return next((k for k, b in enumerate(blocks) if np.array_equal(block, b)), None)


def _explain_gather(got, x, rows, cols, call):
    """The ring mistake behind a wrong all-gather: a block missing, or blocks in the wrong places."""
    k = len(x) // (rows * cols)
    if np.shape(got) != gathered(x, rows, cols).shape:
        return
    got = np.asarray(got).reshape(rows, cols, cols, k, *x.shape[1:])   # [mesh row, device, slot, ...]
    blocks = x.reshape(rows, cols, k, *x.shape[1:])
    for i in range(rows):
        for j in range(cols):
            held = [_whose(got[i, j, s], blocks[i]) for s in range(cols)]
            if held == list(range(cols)):
                continue
            missing = sorted(set(range(cols)) - set(h for h in held if h is not None))
            if missing:
                raise AssertionError(f"{call}: device {j} of a ring of {cols} never stores device {missing[0]}'s block "
                                     "(its result lacks it): in n - 1 steps, each passing on the block that arrived "
                                     "last, every block reaches every device once")
            raise AssertionError(f"{call}: device {j} of a ring of {cols} holds the right blocks in the wrong places "
                                 f"(device {held[0]}'s block first): the block that arrives after s steps is device "
                                 "(me - s) mod n's, and goes to rows of that device")


def _explain_scatter(got, x, rows, cols, call):
    """A device's own part of a chunk added twice to a finished sum, which the engine's measurement one chunk at a
    time cannot tell (a part missing, or a chunk's sum on the wrong device, it names itself)."""
    if np.shape(got) != scattered(x, rows, cols).shape:
        return
    chunks = x.reshape(rows, cols, cols, -1, *x.shape[1:]).astype(np.float64)
    got = np.asarray(got, np.float64).reshape(rows, cols, -1, *x.shape[1:])
    close = lambda a, b: np.allclose(a, b, rtol=1e-4, atol=1e-4)  # noqa: E731
    for i in range(rows):
        for j in range(cols):
            want = chunks[i, :, j].sum(axis=0)
            if close(got[i, j], want):
                continue
            twice = next((c for c in range(cols) if close(got[i, j], chunks[i, :, c].sum(axis=0) + chunks[i, j, c])),
                         None)
            if twice is not None:
                raise AssertionError(f"{call}: device {j} of a ring of {cols} returns the sum of chunk {twice} with "
                                     "its own part added twice: n - 1 steps bring every other device's part of its "
                                     "chunk; an n-th step passes a finished sum on and adds a part of it again")


FUNCTIONS = {"ring_all_gather": (gathered, _explain_gather, lambda rows, cols, k: rows * cols * k),
             "ring_reduce_scatter": (scattered, _explain_scatter, lambda rows, cols, k: rows * cols * cols * k)}


def splits(function, rows, cols) -> tuple[Split, ...]:
    """How x's blocks are measured one at a time after a wrong value: each device's block, and for the reduce-scatter
    also each chunk of it (a chunk's sum belongs on one device of the ring: whose chunk lands where)."""
    devices = Split(0, 0, rows * cols, "x")
    if function != "ring_reduce_scatter":
        return (devices,)
    return devices, Split(0, 0, rows * cols * cols, "x", chunks=cols)


def run(student, rng, function, rows, cols, block=(2, 3)):
    """The program of rings.<function> on a rows x cols mesh, its values checked, and its input."""
    reference, explain, length = FUNCTIONS[function]
    x = rng.normal(size=(length(rows, cols, block[0]), *block[1:])).astype(np.float32)
    call = f"{function}(x, 'model') on a {rows} x {cols} mesh"
    values = functools.partial(student.probe, "probes_programs.values", "ring", x, function=f"rings.{function}",
                               rows=rows, cols=cols)
    with explained(lambda: explain(values(), x, rows, cols, call)):
        program = student.program("probes_programs.ring", x,
                                  expect=lambda x: reference(x.astype(np.float64), rows, cols),
                                  what=f"{call} (row r is what the devices returned, in mesh order)", rtol=1e-4,
                                  atol=1e-4, function=f"rings.{function}", rows=rows, cols=cols,
                                  compare=(AXES, (rows, cols)),
                                  counts=meshes.counts(AXES, (rows, cols)), probe=Probe(
                                      splits=splits(function, rows, cols), out=Split(0, 0, rows * cols, "the result"),
                                      rerun=lambda v: student.probe("probes_programs.values", "ring", v,
                                                                    function=f"rings.{function}", rows=rows, cols=cols)))
    return x, program


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_ring_matches_the_builtin_collective(student, rng, devices, function):
    run(student, rng, function, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
@pytest.mark.parametrize("function", FUNCTIONS)
def test_rings_on_another_mesh_shape(student, rng, devices, function):
    run(student, rng, function, *meshes.other(devices), block=(1, 2, 2))


def _expect_ring(program, function, rows, cols, unit_bytes, unit):
    """Only ppermutes, along 'model', n - 1 of them, each carrying one block (or chunk); or a ring that runs both
    ways at once, n - 1 each way, that together carry n - 1 blocks."""
    sizes, steps = (rows, cols), cols - 1
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    moved = meshes.moving(program.hlo, AXES, sizes)
    where = f"on a {rows} x {cols} mesh (rings of {cols})"
    rings.expect_own_block(program, f"{function}(x, 'model')", where)
    for c in moved:
        if c.op != "collective-permute":
            raise AssertionError(f"{function} runs {meshes.phrase(c, AXES, sizes)} {where}: build it from lax.ppermute "
                                 f"alone, one {unit} to the next device per step")
        if meshes.axes_of(c, AXES, sizes) != ("model",):
            raise AssertionError(f"{function} runs a ppermute {meshes.over_text(meshes.axes_of(c, AXES, sizes))} "
                                 f"{where}: the ring is the axis you are given, 'model'; its length is "
                                 "lax.axis_size(axis_name), not jax.device_count()")
    count = hlo.count(program.hlo, "collective-permute") if moved else 0
    if count is None:
        raise AssertionError(f"{function} runs a ppermute in a loop whose length is unknown when it compiles "
                             "(lax.while_loop?): use a Python for loop or lax.fori_loop(1, n, ...)")
    sent = hlo.bytes_moved(program.hlo, "collective-permute")
    both_ways = count == 2 * steps and sent is not None and sent <= steps * unit_bytes  # half of each unit each way
    if count != steps and not both_ways:
        extra = (": the n-th step sends every " + unit + " back to where it started") if count == cols else ""
        raise AssertionError(f"{function} runs {count} ppermutes the answer needs {where}, expected n - 1 = "
                             f"{steps}{extra}{hlo.idle_note(program.hlo, 'collective-permute')}")
    heavy = next((c for c in moved if c.bytes > unit_bytes), None)
    if heavy:
        raise AssertionError(f"{function}'s ppermutes carry {heavy.bytes} bytes per step {where}; a {unit} is "
                             f"{unit_bytes}: pass one {unit} per step, not the whole array")
    rings.expect_ring(program.hlo, function, unit, where)


def _every_program(devices):
    """The meshes and block shapes a ring is read on: every device in one ring first, then each that a test of rings
    compiles (a program knows both while it is traced)."""
    return [*((sizes, (2, 3)) for sizes in meshes.every(devices, meshes.long_rings, meshes.square)),
            (meshes.other(devices), (1, 2, 2))]


@pytest.mark.devices(2, 4, 8)
def test_ring_all_gather_sends_n_minus_1_blocks(student, rng, devices):
    for (rows, cols), block in _every_program(devices):
        x, program = run(student, rng, "ring_all_gather", rows, cols, block)
        _expect_ring(program, "ring_all_gather", rows, cols, x[: len(x) // (rows * cols)].nbytes, "block")


@pytest.mark.devices(2, 4, 8)
def test_ring_reduce_scatter_sends_n_minus_1_chunks(student, rng, devices):
    for (rows, cols), block in _every_program(devices):
        x, program = run(student, rng, "ring_reduce_scatter", rows, cols, block)
        _expect_ring(program, "ring_reduce_scatter", rows, cols, x[: len(x) // (rows * cols * cols)].nbytes,
                     "chunk")
