"""Suite for task mesh: a ('data', 'model') Mesh, a P('data', 'model') sharding, a row-parallel matmul.

Meshes and shardings are described by probes_mesh.py in the worker. Mesh shapes follow the device
count, so every count from 1 up gets a mesh that uses all of its devices. Visible tests run at 1, 2
and 4 devices; the hidden ones (course.yaml) shard onto the other mesh shape at every count, and read
the compiled matmul for one psum among the devices of a mesh row.
"""

import re

import numpy as np
import pytest

from grader.suite import expect_close, expect_shape, feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.jax_errors import Rule, empty_assertion_on

AXES = ("data", "model")
K_PER_COLUMN, P_COLUMNS = 4, 5  # sharded_matmul's x is (3 * n_rows, 4 * n_cols) and w is (4 * n_cols, 5): _matmul


def _blocks_disagree(match, situation):
    """Inside shard_map, x's block and w's block contract 4 * c with 4 (or the reverse) only when the two in_specs
    split k differently: one over 'model', the other not at all."""
    a, b = int(match["a"]), int(match["b"])
    if a == b or min(a, b) != K_PER_COLUMN or max(a, b) % K_PER_COLUMN:
        return None
    return (f"x's block and w's block contract {a} with {b}: the in_specs split k, x's columns and w's rows, "
            "differently; split both over 'model', in_specs (P('data', 'model'), P('model', None))")


def _columns_of_w_split(match, situation):
    """An axis of size 5 that does not split is w's columns: nothing else in sharded_matmul has that size."""
    if int(match["size"]) != P_COLUMNS or match["axis"] != "1":
        return None
    return (f"w's {P_COLUMNS} columns were split over the mesh (its PartitionSpec names a mesh axis in second place): "
            "w is split by rows over 'model', P('model', None), and keeps its columns whole")


# Shapes tell which of sharded_matmul's arrays a JAX error is about; the grader's own rules tell the rest.
JAX_ERRORS = (
    Rule("blocks that do not multiply", re.compile(r"contracting dimensions to have the same shape, got "
                                                   r"\((?P<a>\d+),?\) and \((?P<b>\d+),?\)"), _blocks_disagree),
    Rule("w's columns split", re.compile(r"implies that array axis (?P<axis>\d+) is partitioned \d+ times, but does "
                                         r"not evenly divide the dimension size (?P<size>\d+)"), _columns_of_w_split),
    empty_assertion_on(AXES),
)


def factor_pairs(n: int) -> list[tuple[int, int]]:
    return [(r, n // r) for r in range(1, n + 1) if n % r == 0]


def tall(n: int) -> tuple[int, int]:
    """More rows than columns where the count allows: 1x1, 2x1, 2x2, 4x2."""
    return max((p for p in factor_pairs(n) if p[0] >= p[1]), key=lambda p: p[1])


def wide(n: int) -> tuple[int, int]:
    """At least two columns from 2 devices on, so the psum over 'model' really adds: 1x1, 1x2, 2x2, 2x4."""
    return tall(n)[::-1]


def spec_text(spec) -> str:
    entries = [repr(tuple(e)) if isinstance(e, list) else repr(e) for e in spec]
    return f"P({', '.join(entries)})"


def _block_text(device, block) -> str:
    return f"d{device}: x[{block[0][0]}:{block[0][1]}, {block[1][0]}:{block[1][1]}]" if block else f"d{device}: nothing"


def show_blocks(call: str, out: dict, rows: int, cols: int) -> None:
    """The picture of which device holds which block, expected against the student's array."""
    if "blocks" not in out:
        return
    ids = out["device_ids"]
    expected = [[_block_text(d, [[i * rows, (i + 1) * rows], [j * cols, (j + 1) * cols]]) for j, d in enumerate(row)]
                for i, row in enumerate(ids.tolist())]
    got = [[_block_text(d, out["blocks"].get(str(d))) for d in row] for row in ids.tolist()]
    feedback.layout(call, expected, got)


def test_make_2d_mesh_names_and_uses_every_device(student, devices):
    for n_rows, n_cols in factor_pairs(devices):
        call = f"make_2d_mesh({n_rows}, {n_cols}) on {devices} devices"
        mesh = student.probe("probes_mesh.make_2d_mesh", n_rows, n_cols)
        if mesh["type"] != "Mesh":
            raise AssertionError(f"{call} returned {mesh['type']}, expected a jax.sharding.Mesh: "
                                 "jax.make_mesh((n_rows, n_cols), ('data', 'model')) builds one with axis names")
        if mesh["axis_names"] != ["data", "model"]:
            raise AssertionError(f"{call} has axis names {tuple(mesh['axis_names'])}, expected ('data', 'model')")
        ids = expect_shape(mesh["device_ids"], (n_rows, n_cols), f"the device grid of {call}")
        if sorted(ids.ravel()) != list(range(devices)):
            raise AssertionError(f"{call} holds devices {sorted(ids.ravel().tolist())}: a mesh uses every device once")


def _check_shard_matrix(student, rng, n_rows, n_cols):
    x = rng.normal(size=(3 * n_rows, 7 * n_cols)).astype(np.float32)  # no axis of 5, which is w's in sharded_matmul
    call = f"shard_matrix(x, mesh) on a {n_rows} x {n_cols} mesh"
    out = student.probe("probes_mesh.shard_matrix", x, n_rows, n_cols)
    show_blocks(call, out, x.shape[0] // n_rows, x.shape[1] // n_cols)
    if "spec" not in out:
        held = (f"a {out['type']}, which has no sharding" if out["sharding"] == "NoneType"
                else f"{out['type']} with a {out['sharding']}, not a NamedSharding")
        raise AssertionError(f"{call} returned {held}: jax.device_put(x, NamedSharding(mesh, P('data', 'model'))) "
                             "places it on the mesh")
    expect_close(out["values"], x, what=call, rtol=0, atol=0, dtype=x.dtype)
    spec = list(out["spec"])
    while spec and spec[-1] is None:
        spec.pop()
    if spec != ["data", "model"]:
        raise AssertionError(f"{call} is sharded with {spec_text(out['spec'])}, expected P('data', 'model'): "
                             "rows split over 'data', columns over 'model'")
    rows, cols = x.shape[0] // n_rows, x.shape[1] // n_cols
    for (i, j), device in np.ndenumerate(out["device_ids"]):
        block = out["blocks"].get(str(device))
        if block != [[i * rows, (i + 1) * rows], [j * cols, (j + 1) * cols]]:
            raise AssertionError(f"{call}: device {device} at mesh position ({i}, {j}) holds x[{block}], expected "
                                 f"block ({i}, {j}); shard over the mesh you are given")


@pytest.mark.devices(1, 2, 4)
def test_shard_matrix_lays_blocks_on_the_mesh(student, rng, devices):
    _check_shard_matrix(student, rng, *tall(devices))


def test_shard_matrix_on_a_wide_mesh(student, rng, devices):
    _check_shard_matrix(student, rng, *wide(devices))


def _matmul(student, rng, devices, asks=None):
    """The HLO of sharded_matmul on a wide mesh (the psum over 'model' adds from 2 devices on), once the grader
    has checked its values; a wrong product is told with the first difference between its collectives and
    the reference's (compare=): a psum over the wrong devices, for one."""
    n_rows, n_cols = wide(devices)
    x = rng.normal(size=(3 * n_rows, 4 * n_cols)).astype(np.float32)
    w = rng.normal(size=(4 * n_cols, 5)).astype(np.float32)
    program = student.program("probes_mesh.sharded_matmul", x, w, n_rows=n_rows, n_cols=n_cols,
                              expect=lambda a, b: a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4, dtype=np.float32,
                              what=f"sharded_matmul(x, w, mesh) on a {n_rows} x {n_cols} mesh",
                              counts=meshes.counts(AXES, (n_rows, n_cols)), asks=asks,
                              compare=(AXES, (n_rows, n_cols)))
    return x, w, {"hlo": program.hlo, "program": program, "sizes": (n_rows, n_cols)}


@pytest.mark.devices(1, 2, 4)
def test_sharded_matmul_matches_numpy(student, rng, devices):
    _matmul(student, rng, devices)


# Every count the value test runs a mesh on (on one device there is nothing to split): on 2 devices 'data' has one
# device, so the rows' split is not measured there, but the psum over 'model' and each device's share of the work are
@pytest.mark.devices(2, 4, 8)
def test_sharded_matmul_is_row_parallel_with_one_psum(student, rng, devices):
    x, w, out = _matmul(student, rng, devices, Asks("jax.shard_map"))
    feedback.communication(out["program"])
    mine = hlo.select(out["hlo"], by_student=True)
    for c in mine:
        if c.op != "all-reduce":
            raise AssertionError(f"sharded_matmul runs {c.a} (from lax.{c.origin}): no device needs whole "
                                 "matrices; multiply the blocks you hold and psum the partial products over 'model'")
    runs = hlo.count(out["hlo"], "all-reduce", by_student=True)  # executions: a psum in a loop runs each time
    if runs != 1:
        said = "an unknown number of" if runs is None else str(runs)
        raise AssertionError(f"sharded_matmul runs {said} psums of its own{hlo.idle_note(out['hlo'])}, expected "
                             "exactly one: write the "
                             "block product with jax.shard_map and add the partial products with lax.psum(..., 'model')")
    n_rows, n_cols = out["sizes"]
    where, block = f"on a {n_rows} x {n_cols} mesh", x.shape[0] // n_rows * w.shape[1] * 4
    axes = meshes.axes_of(mine[0], AXES, out["sizes"])
    if n_cols > 1 and axes != ("model",):
        raise AssertionError(f"sharded_matmul's psum runs {meshes.over_text(axes)} {where}: the partial products "
                             "of one row of the mesh add up among that row's devices, so psum over 'model' only")
    if meshes.per_run(mine[0]) > block:
        raise AssertionError(f"sharded_matmul's psum carries {meshes.per_run_text(mine[0])} per device {where}; "
                             f"the device's partial product is {block}: psum only x_block @ w_block")
    work.expect_share_of_work(out["program"], "sharded_matmul", "each device multiplies only the blocks it holds, "
                              "and the psum over 'model' adds the partial products", n_rows * n_cols,
                              f"on a {n_rows} x {n_cols} mesh")
    work.expect_collectives_of_reference(out["program"], "sharded_matmul", "the one psum over 'model' adds the "
                                         "partial products, and nothing else moves", n_rows * n_cols, where)
