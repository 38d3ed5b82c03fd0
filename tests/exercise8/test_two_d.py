"""Suite for the extra-credit task two_d: FSDP over 'data' and tensor parallelism over 'model' in one step.

probes_programs.on_mesh hands train_step a ('data', 'model') mesh and a fixed lr; student.program has
a clean worker compile and run it. The reference is a float64 full-batch step on one device. Visible
tests run the squarest mesh at 1, 2 and 4 devices; the hidden ones (course.yaml) another mesh shape,
and read the compiled step on both shapes (a program knows its mesh while it is traced): weights
gathered and gradients reduce-scattered over 'data' only, the activations' partial sums all-reduced
over 'model', no gradient in an all-reduce, and each device left with its blocks of the new weights.
"""

import numpy as np
import pytest

from grader.suite import explained, feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.jax_errors import empty_assertion_on

AXES = ("data", "model")
JAX_ERRORS = (empty_assertion_on(AXES),)  # an axis name the mesh lacks, told against its axes
LR = 0.05


def sgd(w1, w2, x, y):
    """One full-batch step in float64: (new w1, new w2, loss at the old weights)."""
    w1, w2 = w1.astype(np.float64), w2.astype(np.float64)
    pre = x @ w1
    hidden = np.maximum(pre, 0)
    residual = hidden @ w2 - y
    d_out = 2 * residual / residual.size
    d_hidden = (d_out @ w2.T) * (pre > 0)
    return w1 - LR * x.T @ d_hidden, w2 - LR * hidden.T @ d_out, np.mean(residual ** 2)


def _explain(got, w1, w2, x, y, rows):
    """The averaging mistake behind a wrong step: both weights moved n_data times as far as the full-batch step (the
    devices' gradients over 'data' summed, not averaged), or the loss n_data times the mean."""
    if rows < 2 or not isinstance(got, (list, tuple)) or len(got) != 3:
        return
    new1, new2, loss = (np.asarray(v, np.float64) for v in got)
    want1, want2, want_loss = sgd(w1, w2, x, y)
    close = lambda a, b: a.shape == np.shape(b) and np.allclose(a, b, rtol=1e-4, atol=1e-5)  # noqa: E731
    if close(new1, w1 + rows * (want1 - w1)) and close(new2, w2 + rows * (want2 - w2)):
        raise AssertionError(f"train_step's update is {rows} times the full-batch step on a mesh of {rows} devices "
                             "along 'data': each device's loss is a mean over its own part of the batch, so the "
                             f"gradients reduce-scattered (or summed) over 'data' add up {rows} such means; divide "
                             "them by the number of devices along 'data'")
    if close(loss, rows * want_loss):
        raise AssertionError(f"train_step's loss is {rows} times the mean loss with {rows} devices along 'data': "
                             "lax.psum adds the devices' losses up; lax.pmean averages them")


def run(student, rng, rows, cols, asks=None):
    w1 = rng.normal(size=(2 * rows, 3 * cols)).astype(np.float32)
    w2 = rng.normal(size=(3 * cols, 2 * rows)).astype(np.float32)
    x = rng.normal(size=(4 * rows, 2 * rows)).astype(np.float32)
    y = rng.normal(size=(4 * rows, 2 * rows)).astype(np.float32)
    fixed = {"function": "two_d.train_step", "shape": [rows, cols], "lr": LR}
    with explained(lambda: _explain(student.probe("probes_programs.values", "on_mesh", w1, w2, x, y, **fixed), w1, w2,
                                    x, y, rows)):
        program = student.program("probes_programs.on_mesh", w1, w2, x, y, asks=asks, expect=sgd,
                                  what=f"train_step(w1, w2, x, y, {LR}, mesh) on a {rows} x {cols} mesh "
                                       "(new w1, new w2, loss)", rtol=1e-4, atol=1e-5,
                                  counts=meshes.counts(AXES, (rows, cols)), compare=(AXES, (rows, cols)), **fixed)
    return w1, w2, x, program


@pytest.mark.devices(1, 2, 4)
def test_two_d_step_equals_a_full_batch_step(student, rng, devices):
    run(student, rng, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
def test_two_d_step_on_another_mesh_shape(student, rng, devices):
    run(student, rng, *meshes.other(devices))


@pytest.mark.devices(2, 4, 8)
def test_two_d_step_communicates_over_the_right_axes(student, rng, devices):
    for sizes in meshes.every(devices, meshes.square, meshes.other):  # every mesh a test of train_step compiles
        _communicates_over_the_right_axes(student, rng, sizes)


def _communicates_over_the_right_axes(student, rng, sizes):
    rows, cols = sizes
    w1, w2, x, program = run(student, rng, rows, cols, Asks())
    partial = x.shape[0] // rows * w2.shape[1] * x.itemsize
    feedback.communication(program, by_student=False)
    where = f"on a {rows} x {cols} mesh"
    moved = meshes.moving(program.hlo, AXES, sizes)
    sums = [c for c in moved
            if c.op in ("all-reduce", "reduce-scatter") and meshes.axes_of(c, AXES, sizes) == ("model",)]
    gathers = [c for c in moved if c.op == "all-gather" and meshes.axes_of(c, AXES, sizes) == ("data",)]
    gradient = min(w1.nbytes, w2.nbytes) // cols  # the smaller weight's gradient, one 'model' block of it whole
    over = {}  # the all-reduces by the axes they run over: their bytes add up (a gradient summed in pieces)
    for c in moved:
        if c.op == "all-reduce":
            over.setdefault(meshes.axes_of(c, AXES, sizes), []).append(c)
    for axes, reduced in over.items():
        if axes == ("model",) and meshes.per_run(reduced) > partial:
            raise AssertionError(f"train_step all-reduces {meshes.per_run_text(reduced)} over 'model' {where}; the "
                                 f"partial sums of the prediction are {partial}: psum only h_block @ w2_block")
        if axes != ("model",) and meshes.per_run(reduced) > 4:
            what = ("a whole gradient, in one all-reduce or in pieces" if meshes.per_run(reduced) >= gradient
                    else "more than the loss's 4 bytes: part of a gradient")
            raise AssertionError(f"train_step all-reduces {meshes.per_run_text(reduced)} {meshes.over_text(axes)} "
                                 f"{where}: {what}. Each device keeps and updates only its "
                                 "blocks, so it needs only its block of the summed gradient: gather the weights inside "
                                 "the function you differentiate, and JAX reduce-scatters their gradients")
    for c in moved:
        axes = meshes.axes_of(c, AXES, sizes)
        if c.op in ("all-gather", "reduce-scatter") and axes != ("data",):
            raise AssertionError(f"train_step runs {meshes.phrase(c, AXES, sizes)} {where}: only FSDP's parts move "
                                 "whole, over 'data' (w1's rows, w2's columns, and their gradients); the 'model' split "
                                 "of the weights stays put, as in tensor_parallel")
        if c.op not in ("all-gather", "reduce-scatter", "all-reduce"):
            raise AssertionError(f"train_step runs {meshes.phrase(c, AXES, sizes)} {where}: nothing needs it")
    scatters = [c for c in moved if c.op == "reduce-scatter" and meshes.axes_of(c, AXES, sizes) == ("data",)]
    # each axis of more than one device needs its collectives (on a 1 x 4 mesh FSDP has nothing to gather)
    missing = " and ".join(what for what, found, axis in (("no sum over 'model' of the partial products", sums, cols),
                                                          ("no all-gather over 'data' of the weight blocks", gathers,
                                                           rows),
                                                          ("no reduce-scatter over 'data' of their gradients",
                                                           scatters, rows))
                           if axis > 1 and not found)
    if missing:
        raise AssertionError(f"train_step's program runs {missing} {where} (of the collectives its answer depends "
                             "on): each device holds only its blocks of w1 and w2, so FSDP gathers them over 'data' "
                             "and reduce-scatters their gradients there, and the tensor split adds h_block @ w2_block "
                             "over 'model'")
    blocks = [(w1.shape[0] // rows, w1.shape[1] // cols), (w2.shape[0] // cols, w2.shape[1] // rows)]
    held = hlo.output_shapes(program.hlo)
    if held and held[:2] != blocks:
        raise AssertionError(f"train_step leaves each device blocks {held[:2]} of the new w1 and w2 {where}, expected "
                             f"{blocks}: w1 stays P('data', 'model') and w2 P('model', 'data')")
    work.expect_share_of_work(program, "train_step", "each device computes the forward and backward pass of its own "
                              "rows of the batch with its own blocks of the weights", rows * cols, where)
    work.expect_collectives_of_reference(program, "train_step", "FSDP gathers the weight blocks and reduce-scatters "
                                         "their gradients over 'data', and the tensor split adds h_block @ w2_block "
                                         "over 'model', each once", rows * cols, where)
