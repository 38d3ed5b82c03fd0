"""Suite for task collective_matmul: x's all-gather done as a ring of ppermutes, overlapped with the products.

probes_programs.on_mesh hands collective_matmul a ('data', 'model') mesh; student.program has a clean
worker compile and run it. Visible tests check y on the squarest mesh at 1, 2 and 4 devices; the
hidden ones (course.yaml) try another mesh shape and read the compiled program on every mesh shape a
test compiles, and on one ring of every device (a program knows its mesh while it is traced):
n_model - 1 ppermutes over 'model', each of one block of x, and no other collective.
"""

import numpy as np
import pytest

from grader.layout import plural
from grader.suite import explained, feedback, hlo, meshes, rings, work
from grader.suite.bypass import Asks
from grader.suite.differences import Probe, Split
from grader.suite.jax_errors import empty_assertion_on

AXES = ("data", "model")
JAX_ERRORS = (empty_assertion_on(AXES),)  # an axis name the mesh lacks, told against its axes


def _explain_order(got, x, w, rows, cols) -> None:
    """Fail, saying so, where in every device's columns of y the rows of device (j + s) hold the product of device
    (j - s)'s block: the block that arrived after s steps, stored s places the wrong way round the ring (on a ring
    of 2 both ways are one)."""
    got, want = np.asarray(got, np.float64), x.astype(np.float64) @ w
    if got.shape != want.shape or cols < 3:
        return
    height, width = len(x) // cols, w.shape[1] // cols
    block = lambda a, b, j: a[b * height:(b + 1) * height, j * width:(j + 1) * width]  # noqa: E731
    if all(np.allclose(block(got, (j + s) % cols, j), block(want, (j - s) % cols, j), rtol=1e-4, atol=1e-4)
           for j in range(cols) for s in range(cols)):
        raise AssertionError(f"collective_matmul on a {rows} x {cols} mesh puts the product of the block that arrived "
                             "after s steps in the rows of the device s places one way round the ring, where the "
                             "block came from the device s places the other way: its product belongs in the rows of "
                             "the device it came from (for a ring that sends i -> i + 1, index (me - s) mod n)")


def run(student, rng, rows, cols, asks=None):
    """x (2 n_model x 5) and w (5 x 3 n_model), and the program of collective_matmul on them."""
    x = rng.normal(size=(2 * cols, 5)).astype(np.float32)
    w = rng.normal(size=(5, 3 * cols)).astype(np.float32)
    fixed = {"function": "collective_matmul.collective_matmul", "shape": [rows, cols]}
    with explained(lambda: _explain_order(student.probe("probes_programs.values", "on_mesh", x, w, **fixed), x, w,
                                          rows, cols)):
        program = student.program("probes_programs.on_mesh", x, w, expect=lambda x, w: x.astype(np.float64) @ w,
                                  what=f"collective_matmul(x, w, mesh) on a {rows} x {cols} mesh", rtol=1e-4,
                                  atol=1e-4, arrives=(["model", None], [None, "model"]), compare=(AXES, (rows, cols)),
                                  counts=meshes.counts(AXES, (rows, cols)), asks=asks, probe=Probe(
                                      splits=(Split(0, 0, cols, "x", "'model' device"),),
                                      rerun=lambda *a: student.probe("probes_programs.values", "on_mesh", *a,
                                                                     **fixed)), **fixed)
    return x, w, program


@pytest.mark.devices(1, 2, 4)
def test_collective_matmul_matches_numpy(student, rng, devices):
    run(student, rng, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
def test_collective_matmul_on_another_mesh_shape(student, rng, devices):
    run(student, rng, *meshes.other(devices))


@pytest.mark.devices(2, 4, 8)
def test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes(student, rng, devices):
    # every device in one ring first, then every mesh a test of collective_matmul compiles
    for sizes in meshes.every(devices, meshes.long_rings, meshes.square, meshes.other):
        _ring_of_n_minus_1_ppermutes(student, rng, sizes)


def _ring_of_n_minus_1_ppermutes(student, rng, sizes):
    rows, cols = sizes
    x, w, program = run(student, rng, rows, cols, Asks("jax.shard_map"))
    block = x.nbytes // cols
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    where = f"on a {rows} x {cols} mesh"
    for c in meshes.moving(program.hlo, AXES, sizes):
        if c.op == "all-gather":
            raise AssertionError(f"collective_matmul runs {meshes.phrase(c, AXES, sizes)} {where}: the point is to do "
                                 "without it. Multiply the block of x you hold, pass it on with lax.ppermute, and "
                                 "multiply what arrives, n - 1 times")
        if c.op != "collective-permute":
            raise AssertionError(f"collective_matmul runs {meshes.phrase(c, AXES, sizes)} {where}: only blocks of x "
                                 "move, around the ring with lax.ppermute; nothing needs adding")
        if meshes.axes_of(c, AXES, sizes) != ("model",):
            raise AssertionError(f"collective_matmul passes blocks {meshes.over_text(meshes.axes_of(c, AXES, sizes))} "
                                 f"{where}: x's rows are split over 'model', so the ring is 'model'")
        if c.bytes > block:
            raise AssertionError(f"collective_matmul's ppermutes carry {c.bytes} bytes {where}; a block of x is "
                                 f"{block}: pass one block of x per step")
    steps = hlo.count(program.hlo, "collective-permute")
    if steps is None:
        raise AssertionError("collective_matmul runs a ppermute in a loop whose length is unknown when it compiles "
                             "(lax.while_loop?): use a Python for loop or lax.fori_loop(1, n, ...)")
    sent = hlo.bytes_moved(program.hlo, "collective-permute")
    both_ways = steps == 2 * (cols - 1) and sent is not None and sent <= (cols - 1) * block  # half a block each way
    if steps != cols - 1 and not both_ways:
        extra = ": after n - 1 steps every block has been multiplied; the last one needs no sending" \
            if steps == cols else ""
        raise AssertionError(f"collective_matmul runs {steps} ppermutes the answer needs {where}, expected n - 1 = "
                             f"{cols - 1}{extra}{hlo.idle_note(program.hlo, 'collective-permute')}")
    rings.expect_ring(program.hlo, "collective_matmul", "block of x", where)
    step = 2 * (x.shape[0] // cols) * x.shape[1] * (w.shape[1] // cols)  # one block of x by the block of w
    largest = hlo.largest_product(program.hlo)
    if largest > work.SLACK * step:
        raise AssertionError(f"collective_matmul runs a product of {largest // 2} multiply-adds on each device "
                             f"{where}, {largest / step:.1f} times one step's ({step // 2}: a block of x by your block "
                             f"of w), and the bound is {work.SLACK:g} times that: the blocks the ring brings are "
                             "multiplied together, after it, so no product overlaps a ppermute. Multiply each block "
                             "as it arrives, then pass it on")
    work.expect_products_once(program, "collective_matmul", step // 2, "Multiply the block you hold, then each block "
                              "that arrives, once each, while the next one travels", where)
    # beside each step, a product of the block it sends: a whole block one way round, half of one in a ring both ways
    # (round 41: half of each block multiplied while it travelled, the other halves behind a barrier after the ring)
    overlapping = hlo.overlapped(program.hlo, step // 2 if both_ways else step)
    if overlapping is not None and overlapping < cols - 1:
        raise AssertionError(f"collective_matmul runs a product while a block travels in only {overlapping} of the "
                             f"ring's {plural(cols - 1, 'step')} {where} (measured on the compiled program: beside "
                             "each other ppermute, every product needs the block it brings or a later one, or waits "
                             "for them behind an optimization_barrier, or runs in another loop iteration, so it runs "
                             "after the transfer). Multiply the block you hold while you pass it on: in each step, the ppermute "
                             "sends a block and a product multiplies that same block (in a lax.fori_loop, both in one "
                             "iteration; the block that arrives is multiplied in the next)")
    work.expect_share_of_work(program, "collective_matmul", "each device multiplies the block of x it holds by its "
                              "block of w, then each block that arrives, once", rows * cols, where)
