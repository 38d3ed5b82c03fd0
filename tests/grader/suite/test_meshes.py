"""Meshes as plain data: shapes, the axis a collective ran over, and each device's block."""

from pathlib import Path

import pytest

from grader.suite import hlo, meshes
from grader.suite.hlo import Collective

NAMES = ("data", "model")


def collective(op, groups):
    return Collective(op, "f32[4]{0}", 1, 16, 1, "", "main", groups)


def test_shapes_are_every_factorisation():
    assert meshes.shapes(1) == [(1, 1)]
    assert meshes.shapes(8) == [(1, 8), (2, 4), (4, 2), (8, 1)]
    assert [meshes.square(n) for n in (1, 2, 4, 8, 9)] == [(1, 1), (1, 2), (2, 2), (2, 4), (3, 3)]
    assert [meshes.other(n) for n in (1, 2, 4, 8)] == [(1, 1), (2, 1), (1, 4), (4, 2)]
    # a ring's structural test: every device in one ring from 3 devices on
    assert [meshes.long_rings(n) for n in (1, 2, 4, 6, 8, 16)] == [(1, 1), (1, 2), (1, 4), (1, 6), (1, 8), (1, 16)]
    # a structural test reads every mesh its task's tests compile, its own first, each once
    assert meshes.every(4, meshes.long_rings, meshes.square, meshes.other) == [(1, 4), (2, 2)]
    assert meshes.every(8, meshes.square, meshes.other) == [(2, 4), (4, 2)]
    assert meshes.every(2, meshes.square, meshes.other) == [(1, 2), (2, 1)]


@pytest.mark.parametrize("groups, axes", [
    (((0, 1, 2, 3), (4, 5, 6, 7)), ("model",)),
    (((0, 4), (1, 5), (2, 6), (3, 7)), ("data",)),
    (((0, 1, 2, 3, 4, 5, 6, 7),), ("data", "model")),
    (((0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,)), ()),
    (((0, 1), (2, 3), (4, 5), (6, 7)), None),     # half rows: no set of axes
])
def test_the_axes_of_a_reduction_on_a_2x4_mesh(groups, axes):
    assert meshes.axes_of(collective("all-reduce", groups), NAMES, (2, 4)) == axes


def test_a_ring_runs_over_the_axes_its_pairs_move_along():
    ring_in_rows = tuple((r * 4 + j, r * 4 + (j + 1) % 4) for r in range(2) for j in range(4))
    assert meshes.axes_of(collective("collective-permute", ring_in_rows), NAMES, (2, 4)) == ("model",)
    ring_over_all = tuple((j, (j + 1) % 8) for j in range(8))
    assert meshes.axes_of(collective("collective-permute", ring_over_all), NAMES, (2, 4)) == ("data", "model")


def test_groups_of_one_device_move_nothing():
    assert not meshes.moves(collective("all-gather", ((0,), (1,))))
    assert not meshes.moves(collective("collective-permute", ((0, 0), (1, 1))))
    assert meshes.moves(collective("reduce-scatter", ((0, 1),)))
    assert meshes.moves(collective("all-reduce", None))  # unknown groups count as moving


def test_real_partitioner_collectives_name_their_axes():
    gather, reduce = hlo.collectives((Path(__file__).parent / "data" / "hlo" / "jit_contraction.txt").read_text())
    assert meshes.axes_of(gather, NAMES, (2, 2)) == ("data",)
    assert meshes.axes_of(reduce, NAMES, (2, 2)) == ("model",)


def test_blocks_follow_the_spec_and_the_mesh_order():
    # rows over both axes: device (i, j) of a 2 x 4 mesh holds row block i * 4 + j of 8
    assert meshes.block_of((16, 3), [["data", "model"], None], NAMES, (2, 4), (1, 2)) == ((12, 14), (0, 3))
    assert meshes.block_of((16, 3), [["model", "data"], None], NAMES, (2, 4), (1, 2)) == ((10, 12), (0, 3))
    assert meshes.block_of((6, 8), [None, "model"], NAMES, (2, 4), (1, 3)) == ((0, 6), (6, 8))
    assert meshes.block_shape((6, 8), ["data", "model"], NAMES, (2, 4)) == (3, 2)
    assert meshes.block_shape((6, 8), [], NAMES, (2, 4)) == (6, 8)


def test_copies_are_the_axes_a_spec_leaves_out():
    assert meshes.copies([None, "model"], NAMES, (2, 4)) == 2
    assert meshes.copies([["data", "model"]], NAMES, (2, 4)) == 1
    assert meshes.copies([], NAMES, (2, 4)) == 8


def test_spec_text_reads_like_the_code():
    assert meshes.spec_text(["data", None]) == "P('data', None)"
    assert meshes.spec_text([["data", "model"], None]) == "P(('data', 'model'), None)"


def test_phrases_name_the_collective_and_its_axis():
    text = (Path(__file__).parent / "data" / "hlo" / "jit_contraction.txt").read_text()
    assert [meshes.phrase(c, NAMES, (2, 2)) for c in meshes.moving(text, NAMES, (2, 2))] == [
        "an all-gather over 'data'", "an all-reduce over 'model'"]
    assert meshes.moving(text, NAMES, (2, 2), "all-reduce")[0].op == "all-reduce"
    assert meshes.phrase(collective("all-reduce", ((0, 1), (2, 3))), NAMES, (4, 1)) == (
        "an all-reduce among a group of devices that is no mesh axis")


def test_bytes_per_run_add_up_over_executions_and_over_several_collectives():
    """A gradient all-reduced one element at a time, or in a loop, moves as much as in one all-reduce."""
    def reduce(bytes_, times):
        return Collective("all-reduce", "f32[]", 1, bytes_, times, "psum", "main")

    assert meshes.per_run(reduce(4, 24)) == 96 and meshes.per_run_text(reduce(4, 24)) == "96 bytes (4 bytes, 24 times)"
    pieces = [reduce(4, 1) for _ in range(24)]
    assert meshes.per_run(pieces) == 96 and meshes.per_run_text(pieces) == "96 bytes (in 24 all-reduces)"
    assert meshes.per_run_text([reduce(4, 1), reduce(4, 23)]) == "96 bytes (in 24 all-reduces)"
    assert meshes.per_run([reduce(4, 1), reduce(4, None)]) == float("inf")
    assert "unknown" in meshes.per_run_text([reduce(4, 1), reduce(4, None)])
