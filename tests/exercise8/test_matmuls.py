"""Suite for task matmuls: the four cases of a sharded matmul, each with the cheapest collective.

probes_programs.on_mesh hands each student function a ('data', 'model') mesh; student.program has a
clean worker compile and run it. Visible tests check y on the squarest mesh at 1, 2 and 4 devices;
the hidden ones (course.yaml) try the other mesh shapes and read the compiled program on every mesh
shape a test compiles (a program knows its mesh while it is traced): the one collective each case
needs, over 'model', its bytes, and each device holding only its block of y.
Sizes make w's block of columns smaller than x's block of rows, so case 4 has one cheapest answer.
"""

import re

import numpy as np
import pytest

from grader.suite import feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.jax_errors import Rule, empty_assertion_on

AXES = ("data", "model")
BOTH = ["data", "model"]
# case: (x's spec, w's spec, y's spec)
CASES = {"matmul_case1": (["data", None], [None, "model"], ["data", "model"]),
         "matmul_case2": (["data", "model"], [None, "model"], ["data", "model"]),
         "matmul_case3": (["data", "model"], ["model", None], ["data", "model"]),
         "matmul_case4": ([BOTH, None], [None, "model"], [BOTH, None])}


# Blocks whose parts of D differ, told in this task's terms (grader.suite.jax_errors tells the rest).
JAX_ERRORS = (Rule("blocks that split D differently",
                   re.compile(r"dot_general requires contracting dimensions to have the same shape, got "
                              r"\((?P<a>\d+),?\) and \((?P<b>\d+),?\)"),
                   lambda match, situation: f"the blocks you multiply hold {match['a']} and {match['b']} numbers of D, "
                   "so one of them lacks part of D: gather it before multiplying (lax.all_gather over the mesh axis "
                   "that splits D, tiled=True, which joins the blocks), or, where no gather is due, check each "
                   "operand's PartitionSpec against the case"),
              empty_assertion_on(AXES))


def run(student, rng, case, rows, cols, asks=None):
    x = rng.normal(size=(4 * rows * cols, 2 * cols)).astype(np.float32)
    w = rng.normal(size=(2 * cols, 3 * cols)).astype(np.float32)
    program = student.program("probes_programs.on_mesh", x, w, asks=asks, expect=lambda x, w: x.astype(np.float64) @ w,
                              what=f"{case}(x, w, mesh) on a {rows} x {cols} mesh", rtol=1e-4, atol=1e-4,
                              function=f"matmuls.{case}", shape=[rows, cols], arrives=CASES[case][:2],
                              counts=meshes.counts(AXES, (rows, cols)), compare=(AXES, (rows, cols)))
    return x, w, program


@pytest.mark.devices(1, 2, 4)
@pytest.mark.parametrize("case", CASES)
def test_matmul_cases_match_numpy(student, rng, devices, case):
    run(student, rng, case, *meshes.square(devices))


@pytest.mark.devices(2, 4, 8)
@pytest.mark.parametrize("case", CASES)
def test_matmul_cases_on_another_mesh_shape(student, rng, devices, case):
    run(student, rng, case, *meshes.other(devices))


def _blocks(x, w, sizes):
    """Bytes per device of x's block (case 2), of a partial y (case 3) and of w's block (case 4)."""
    (rows, cols), item = sizes, x.itemsize
    return {"x": x.shape[0] // rows * x.shape[1] // cols * item, "partial": x.shape[0] // rows * w.shape[1] * item,
            "w": w.nbytes // cols}


def _needed(case, blocks, cols) -> tuple[str | None, int, str]:
    """The one collective a case needs on a mesh of ``cols`` devices along 'model', the bytes each device puts into
    it, and why."""
    if cols == 1:
        return None, 0, "with one device along 'model', every device holds all of D and all of y's columns"
    return {"matmul_case1": (None, 0, "D is whole on every device: each device multiplies what it holds"),
            "matmul_case2": ("all-gather", blocks["x"], "a device holds only some of x's columns: it receives the "
                             "rest of its rows of x from its mesh row (lax.all_gather over 'model'), and has all of "
                             "w's rows already"),
            "matmul_case3": ("reduce-scatter", blocks["partial"], "a device multiplies what it holds into a partial "
                             "sum of its rows of y, all columns, but keeps only its columns: lax.psum_scatter over "
                             "'model' adds the partial sums and leaves each device its block"),
            "matmul_case4": ("all-gather", blocks["w"], "a device needs every column of w for its rows of x: it "
                             "gathers w's column blocks over 'model' (smaller than x's rows here)")}[case]


def _wrong_collective(case, moved, sizes, blocks, text) -> str | None:
    """The mistake behind a case that runs other collectives than the one it needs, or None (``text``: the compiled
    program)."""
    op, size, why = _needed(case, blocks, sizes[1])
    ran = " and ".join(meshes.phrase(c, AXES, sizes) for c in moved) or "no collective"
    ops = sorted(c.op for c in moved)
    if ops == ([op] if op else []):
        return _wrong_place(case, moved, sizes, blocks) if op else None
    if op == "reduce-scatter" and ops == ["all-to-all"] and hlo.sends_products(text, "all-to-all") \
            and hlo.sums_what_arrives(text, "all-to-all"):
        # a reduce-scatter by hand (round 36, as fsdp accepts it): each device's blocks of its partial sum sent to
        # their owners by one all_to_all, no more than the partial sum, then only summed; one that sends blocks of x
        # and w (round 41), or does anything but add up what arrives (rounds 42, 43), is a gather by another name
        return _wrong_place(case, moved, sizes, blocks)
    if op == "reduce-scatter" and ops == ["all-to-all"]:  # measured: what it sends, or what is done with it
        what = ("sends are blocks of x and w, not products of them" if not hlo.sends_products(text, "all-to-all")
                else "brings is then multiplied, not only added up")
        return (f"{case} runs {ran}, and what it {what}: that gathers operands, where a reduce-scatter suffices. "
                f"{why} (by hand: one all_to_all of the partial sum's column blocks to their owners, summed where they "
                "arrive)")
    if case == "matmul_case3" and ops == ["all-reduce"]:
        return (f"{case} runs {ran}: an all-reduce where a reduce-scatter suffices. Every device receives the whole "
                "sum and keeps only its columns; lax.psum_scatter(partial, 'model', scatter_dimension=1, tiled=True) "
                "adds the partial sums and hands each device just its block: half the traffic")
    if case == "matmul_case3" and "all-gather" in ops:
        return (f"{case} runs {ran}: gathering operands where a reduce-scatter suffices. When x and w split D the "
                f"same way, {why}")
    if case == "matmul_case2" and "all-reduce" in ops:
        return (f"{case} runs {ran}: it sums partial products ({blocks['partial']} bytes per device) where gathering "
                f"x's block ({blocks['x']} bytes) suffices; {why}")
    return f"{case} runs {ran}; it needs {f'exactly one {op}' if op else 'none'}: {why}"


def _wrong_place(case, moved, sizes, blocks) -> str | None:
    """The mistake behind the right kind of collective over the wrong axis or with too many bytes, or None."""
    _, size, why = _needed(case, blocks, sizes[1])
    op, axes = moved[0].op, meshes.axes_of(moved[0], AXES, sizes)
    if axes != ("model",):
        return (f"{case} runs its {op} {meshes.over_text(axes)}: the blocks it needs are spread over 'model' (each "
                "mesh row holds all of them), so name 'model'")
    if meshes.per_run(moved[0]) > size:
        return f"{case}'s {op} takes {meshes.per_run_text(moved[0])} per device where {size} suffice: {why}"
    return None


@pytest.mark.devices(2, 4, 8)
@pytest.mark.parametrize("case", CASES)
def test_matmul_cases_send_the_cheapest_collective(student, rng, devices, case):
    for sizes in meshes.every(devices, meshes.square, meshes.other):  # every mesh a test of the case compiles
        _sends_the_cheapest_collective(student, rng, case, sizes)


def _sends_the_cheapest_collective(student, rng, case, sizes):
    rows, cols = sizes
    x, w, program = run(student, rng, case, rows, cols, Asks("jax.shard_map", names=("x", "w")))
    blocks = _blocks(x, w, sizes)
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    wrong = _wrong_collective(case, meshes.moving(program.hlo, AXES, sizes), sizes, blocks, program.hlo)
    if wrong:
        raise AssertionError(f"{wrong} ({rows} x {cols} mesh)")
    held, block = hlo.output_shapes(program.hlo), meshes.block_shape((x.shape[0], w.shape[1]), CASES[case][2], AXES,
                                                                    sizes)
    if held and held[0] != block:
        raise AssertionError(f"{case} leaves each device a {held[0]} block of y on a {rows} x {cols} mesh, "
                             f"expected {block}: y laid out as {meshes.spec_text(CASES[case][2])}, each device keeping "
                             "its block")
    work.expect_share_of_work(program, case, "each device multiplies only the blocks it holds, or gathers, and the "
                              "collective finishes the product", rows * cols, f"on a {rows} x {cols} mesh")
