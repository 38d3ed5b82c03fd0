"""Suite for task tensor_parallel: a column-parallel then row-parallel MLP with one all-reduce.

probes_programs.on_mesh hands mlp a ('data', 'model') mesh; student.program has a clean worker
compile and run it. Visible tests check y on the squarest mesh at 1, 2 and 4 devices; the hidden ones
(course.yaml) try another mesh shape and read the compiled forward pass on both shapes (a program knows
its mesh while it is traced): one all-reduce over 'model' of the partial sums, no all-gather of the
activations, and y left split over 'data'.
"""

import re

import numpy as np
import pytest

from grader.suite import feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.differences import Probe, Split
from grader.suite.jax_errors import Rule, empty_assertion_on

AXES = ("data", "model")


# Layers split the wrong way, told in this task's terms (grader.suite.jax_errors tells the rest).
JAX_ERRORS = (Rule("layers split the wrong way",
                   re.compile(r"dot_general requires contracting dimensions to have the same shape, got "
                              r"\((?P<a>\d+),?\) and \((?P<b>\d+),?\)"),
                   lambda match, situation: f"a block product contracts {match['a']} numbers with {match['b']}: w1 is "
                   "column-parallel, P(None, 'model'), so x keeps all of D; w2 is row-parallel, P('model', None), so "
                   "its rows match the columns of h a device computed"),
              empty_assertion_on(AXES))


def reference(x, w1, w2):
    return np.maximum(x.astype(np.float64) @ w1, 0) @ w2


def run(student, rng, rows, cols, asks=None):
    # D = H: a device's block of the activations h is then no larger than its block of x on any mesh, so that a
    # per-device function handed its block of h (the first layer left to XLA) is told from one handed x whole
    # (grader.sandbox.program_held bounds what a value computed from x holds of it by its bytes; round 54)
    x = rng.normal(size=(2 * rows, 4 * cols)).astype(np.float32)
    w1 = rng.normal(size=(4 * cols, 4 * cols)).astype(np.float32)
    w2 = rng.normal(size=(4 * cols, 2 * cols)).astype(np.float32)
    program = student.program("probes_programs.on_mesh", x, w1, w2, asks=asks, expect=reference,
                              what=f"mlp(x, w1, w2, mesh) on a {rows} x {cols} mesh", rtol=1e-4, atol=1e-4,
                              function="tensor_parallel.mlp", shape=[rows, cols],
                              counts=meshes.counts(AXES, (rows, cols)), compare=(AXES, (rows, cols)), probe=Probe(
                                  splits=(Split(2, 0, cols, "w2", "'model' device"),
                                          Split(0, 0, rows, "x", "'data' device")),
                                  rerun=lambda *a: student.probe("probes_programs.values", "on_mesh", *a,
                                                                 function="tensor_parallel.mlp", shape=[rows, cols])))
    return x, w1, w2, program


@pytest.mark.devices(1, 2, 4)
def test_mlp_matches_numpy(student, rng, devices):
    run(student, rng, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
def test_mlp_on_another_mesh_shape(student, rng, devices):
    run(student, rng, *meshes.other(devices))


@pytest.mark.devices(2, 4, 8)
def test_mlp_runs_one_all_reduce_over_model(student, rng, devices):
    for sizes in meshes.every(devices, meshes.square, meshes.other):  # every mesh a test of mlp compiles
        _one_all_reduce_over_model(student, rng, sizes)


def _one_all_reduce_over_model(student, rng, sizes):
    rows, cols = sizes
    x, w1, w2, program = run(student, rng, rows, cols, Asks())
    partial = x.shape[0] // rows * w2.shape[1] * x.itemsize
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    where = f"on a {rows} x {cols} mesh"
    moved = meshes.moving(program.hlo, AXES, sizes)
    gathers = [c for c in moved if c.op == "all-gather"]
    if gathers:
        raise AssertionError(f"mlp runs {meshes.phrase(gathers[0], AXES, sizes, why=True)} {where}: nothing needs "
                             "gathering. relu(x @ w1_block) gives each device its own columns of the activations, "
                             "and w2's rows match them: multiply, then add the partial sums over 'model'")
    if [c.op for c in moved] != (["all-reduce"] if cols > 1 else []):
        ran = " and ".join(meshes.phrase(c, AXES, sizes) for c in moved) or "no collective the answer needs"
        needs = ("exactly one all-reduce over 'model', of the partial sums h_block @ w2_block" if cols > 1 else
                 "none with one device along 'model': each device holds all of w1 and w2, and its rows of x")
        raise AssertionError(f"mlp runs {ran} {where}{hlo.idle_note(program.hlo)}; a forward pass needs {needs}")
    axes = meshes.axes_of(moved[0], AXES, sizes) if moved else ("model",)
    if axes != ("model",):
        raise AssertionError(f"mlp's all-reduce runs {meshes.over_text(axes)} {where}: the partial sums to add are "
                             "those of the devices in one mesh row, which hold the other columns of h: "
                             "lax.psum(..., 'model')")
    if moved and meshes.per_run(moved[0]) > partial:
        raise AssertionError(f"mlp all-reduces {meshes.per_run_text(moved[0])} per device {where}; the partial sums "
                             "of y are "
                             f"{partial}: add up h_block @ w2_block, not the activations")
    held = hlo.output_shapes(program.hlo)
    if held and held[0] != (x.shape[0] // rows, w2.shape[1]):
        raise AssertionError(f"mlp leaves each device a {held[0]} block of y {where}, expected "
                             f"{(x.shape[0] // rows, w2.shape[1])}: y's rows stay split over 'data', P('data', None)")
    work.expect_share_of_work(program, "mlp", "each device multiplies only its blocks (its rows of x by its block "
                              "of w1, then that h block by its block of w2), and the all-reduce over 'model' adds the "
                              "partial sums", rows * cols, where)
