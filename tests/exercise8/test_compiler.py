"""Suite for task compiler: jax.jit with out_shardings on an Auto mesh, graded from the compiled program.

probes_programs.placed hands the student's function x and w on an Auto ('data', 'model') mesh, and the
clean worker that compiles and runs the exported program places them as the task says they arrive
(``arrives``), so a function that wants them laid out otherwise moves them, and that is measured.
Visible tests check the values on the squarest mesh at 1, 2 and 4 devices; the hidden ones
(course.yaml) try the other mesh shapes and read, on each mesh shape a test compiles (a program
knows its mesh while it is traced), which collectives the partitioner added, over which axis, and
how much of y each device holds.
"""

from collections import Counter

import numpy as np
import pytest

from grader.suite import feedback, hlo, meshes, work
from grader.suite.bypass import Asks

AXES = ("data", "model")
ARRIVES = {"no_collective": (["data", None], [None, "model"]),
           "one_reduction": (["data", "model"], ["model", None])}


def run(student, rng, function, rows, cols, asks=None):
    """x, w and the program of compiler.<function>(x, w, mesh) on a rows x cols mesh, its values checked."""
    x = rng.normal(size=(3 * rows, 2 * cols)).astype(np.float32)
    w = rng.normal(size=(2 * cols, 5 * cols)).astype(np.float32)
    x_spec, w_spec = ARRIVES[function]
    program = student.program("probes_programs.placed", x, w, expect=lambda x, w: x.astype(np.float64) @ w,
                              what=f"{function}(x, w, mesh) on a {rows} x {cols} mesh", rtol=1e-4, atol=1e-4,
                              function=f"compiler.{function}", rows=rows, cols=cols, x_spec=x_spec, w_spec=w_spec,
                              arrives=(x_spec, w_spec), asks=asks, counts=meshes.counts(AXES, (rows, cols)))
    return x, w, program


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("function", ARRIVES)
def test_compiler_matches_numpy(student, rng, devices, function):
    run(student, rng, function, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
@pytest.mark.parametrize("function", ARRIVES)
def test_compiler_on_another_mesh_shape(student, rng, devices, function):
    run(student, rng, function, *meshes.other(devices))


def _ran(moved, sizes) -> str:
    """The collectives a program runs, the same one said once with how often; each with what XLA added it for where
    that is not the product itself (every collective of this task is XLA's; one for a device_put is the code's)."""
    said = Counter(meshes.phrase(c, AXES, sizes, why=c.origin != "dot_general") for c in moved)
    return " and ".join(p if k == 1 else f"{k} {p.split(' ', 2)[1]}s {p.split(' ', 2)[2]}"
                        for p, k in said.items()) or "no collective"


@pytest.mark.devices(2, 4, 8)
def test_no_collective_runs_none(student, rng, devices):
    for sizes in meshes.every(devices, meshes.square, meshes.other):  # every mesh a test of it compiles
        _runs_none(student, rng, sizes)


def _runs_none(student, rng, sizes):
    rows, cols = sizes
    x, w, program = run(student, rng, "no_collective", rows, cols, Asks(names=("x", "w")))
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    moved = meshes.moving(program.hlo, AXES, sizes)
    if moved:
        raise AssertionError(f"no_collective's program runs {_ran(moved, sizes)} on a {rows} x {cols} mesh: y ends "
                             "up somewhere other than where it is computed. Device (i, j) holds x's rows i and w's "
                             "columns j, so it computes block (i, j) of y: rows over 'data', columns over 'model'; "
                             "leave y there")
    held, share = hlo.output_shapes(program.hlo), (x.shape[0] // rows, w.shape[1] // cols)
    if held and held[0] != share:
        raise AssertionError(f"no_collective leaves each device a {held[0]} block of y on a {rows} x {cols} mesh, "
                             f"expected its {share} share: split y over both mesh axes")
    work.expect_share_of_work(program, "no_collective", "device (i, j) multiplies only the x rows and w columns it "
                              "holds", rows * cols, f"on a {rows} x {cols} mesh")


@pytest.mark.devices(2, 4, 8)
def test_one_reduction_runs_one_sum_over_model(student, rng, devices):
    for sizes in meshes.every(devices, meshes.square, meshes.other):  # every mesh a test of it compiles
        _runs_one_sum_over_model(student, rng, sizes)


def _runs_one_sum_over_model(student, rng, sizes):
    rows, cols = sizes
    x, w, program = run(student, rng, "one_reduction", rows, cols, Asks(names=("x", "w")))
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    moved = meshes.moving(program.hlo, AXES, sizes)
    sums = [c for c in moved
            if c.op in ("all-reduce", "reduce-scatter") and meshes.axes_of(c, AXES, sizes) == ("model",)]
    where = f"on a {rows} x {cols} mesh"
    if not sums and cols > 1:  # what it runs instead is told as measured against the reference's program
        differs = program.difference((AXES, sizes))
        raise AssertionError(f"one_reduction's program runs {_ran(moved, sizes)} {where}, and no sum over 'model'"
                             + (f": {differs}" if differs else ""))
    if len(moved) > len(sums[:1]):  # on one device along 'model' (2 x 1), no sum is needed either
        gathered = any(c.op == "all-gather" and meshes.axes_of(c, AXES, sizes) == ("data",) for c in moved)
        rows_whole = " Gathered over 'data', all of y's rows end up on every device;" if gathered else ""
        besides, rest = (("besides the sum over 'model' it moves y", ", and the sum over 'model' is all that remains")
                         if sums else ("it moves y, and with one device along 'model' nothing needs summing", ""))
        raise AssertionError(f"one_reduction's program runs {_ran(moved, sizes)} {where}: {besides}.{rows_whole} keep "
                             f"y's rows split over 'data', as x's are{rest}")
    work.expect_share_of_work(program, "one_reduction", "each device multiplies only the blocks of x and w it holds, "
                              "and the sum over 'model' adds the partial products", rows * cols, where)
