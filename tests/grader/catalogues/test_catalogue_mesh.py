"""Wrong submissions for task mesh: each loses points on mesh, says why, and leaves dot at full points."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

MESH = 'return jax.make_mesh((n_rows, n_cols), ("data", "model"))'
SHARDING = 'NamedSharding(mesh, P("data", "model"))'

WRONG = {
    # round 23 (written apart): the partial products moved by an all-gather XLA adds (a device_put between two
    # shard_maps) and added outside them; the one psum over 'model' only hands on column 0's sum
    "partial products gathered by XLA, the psum handing one on": Wrong(
        {"mesh": mutate("mesh", ("    return row_parallel(shard_matrix(x, mesh), w)", '''    parts = jax.shard_map(lambda a, b: (a @ b)[None], mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                          out_specs=P("model", "data", None))(shard_matrix(x, mesh), w)
    parts = jax.lax.optimization_barrier(jax.device_put(parts, NamedSharding(mesh, P(None, "data", None))))
    total = sum(parts[k] for k in range(1, parts.shape[0])) + parts[0]
    show = jax.shard_map(lambda t: lax.psum(jax.numpy.where(lax.axis_index("model") == 0, t, 0 * t), "model"),
                         mesh=mesh, in_specs=P("data", None), out_specs=P("data", None))
    return show(total)'''))},
        "4", says=("runs an all-gather over 'model' (added by XLA", "where the reference's runs no all-gather")),
    "the chapter's mesh_utils grid": Wrong(
        {"mesh": mutate("mesh", (MESH, "from jax.experimental import mesh_utils\n"
                                      "    return mesh_utils.create_device_mesh((2, 2))"))},
        "4", says=("returned ndarray, expected a jax.sharding.Mesh",)),
    "hard-coded 2 x 2 mesh": Wrong(
        {"mesh": mutate("mesh", (MESH, MESH.replace("(n_rows, n_cols)", "(2, 2)")))},
        "4", says=("make_2d_mesh(1, 4) on 4 devices returned shape (2, 2), expected shape (1, 4)",)),
    "PartitionSpec with the axes swapped": Wrong(
        {"mesh": mutate("mesh", (SHARDING, SHARDING.replace('"data", "model"', '"model", "data"')))},
        "4", says=("is sharded with P('model', 'data'), expected P('data', 'model')",)),
    "values without a sharding": Wrong(
        {"mesh": mutate("mesh", (f"jax.device_put(x, {SHARDING})", "jax.numpy.asarray(x)"))},
        "4", says=("not a NamedSharding",)),
    "psum over 'data', with the check that caught it turned off": Wrong(
        {"mesh": mutate("mesh", ('lax.psum(x_block @ w_block, "model")', 'lax.psum(x_block @ w_block, "data")'),
               ('out_specs=P("data", None))', 'out_specs=P("data", None), check_vma=False)'))},
        "4", says=("your all-reduce runs over 'data'; the reference's runs over 'model'",)),
    "a plain matmul, no shard_map": Wrong(
        {"mesh": mutate("mesh", ("return row_parallel(shard_matrix(x, mesh), w)", "return x @ w"))},
        "4", says=("its program has no jax.shard_map that its answer depends on",)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "axis names swapped, w's columns split": Wrong(
        apart("mesh", ('jax.make_mesh((n_rows, n_cols), ("data", "model"))',
                       'jax.make_mesh((n_rows, n_cols), ("model", "data"))'),
              ('w = jax.device_put(w, NamedSharding(mesh, P("model", None)))',
               'w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))'),
              ('in_specs=(P("data", "model"), P("model", None))', 'in_specs=(P("data", "model"), P(None, "model"))')),
        "2", says=("has axis names ('model', 'data'), expected ('data', 'model')",), never=("choose shapes",),
        fails=(("test_sharded_matmul_matches_numpy", ("w's 5 columns were split", "P('model', None)"), {2}),)),
    "x's columns kept whole, in shard_matrix and in the matmul": Wrong(
        apart("mesh", ('    return jax.device_put(x, NamedSharding(mesh, P("data", "model")))\n\n\ndef sharded',
                       '    return jax.device_put(x, NamedSharding(mesh, P("data")))\n\n\ndef sharded'),
              ('x = jax.device_put(x, NamedSharding(mesh, P("data", "model")))\n    w',
               'x = jax.device_put(x, NamedSharding(mesh, P("data", None)))\n    w'),
              ('in_specs=(P("data", "model"), P("model", None))', 'in_specs=(P("data", None), P("model", None))')),
        "2", says=("is sharded with P('data'), expected P('data', 'model')",), never=("params",),
        fails=(("test_sharded_matmul_matches_numpy", ("contract 8 with 4", "split k"), {2}),)),
    "the placed arrays multiplied outside shard_map": Wrong(
        apart("mesh", ("""    def block(xb, wb):
        return lax.psum(xb @ wb, "model")

    return jax.shard_map(block, mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                         out_specs=P("data", None))(x, w)""", "    return x @ w")), "2",
        says=("split over mesh axis 'model' in both operands", "inside jax.shard_map")),
}


RIGHT = {
    "make_2d_mesh with Auto axes": Right({"mesh": mutate(
        "mesh", (MESH, 'return jax.make_mesh((n_rows, n_cols), ("data", "model"), '
                       "axis_types=(jax.sharding.AxisType.Auto,) * 2)"))}),
    "w placed with jax.reshard instead of jax.device_put": Right({"mesh": mutate(
        "mesh", ('w = jax.device_put(w, NamedSharding(mesh, P("model", None)))',
                 'w = jax.reshard(w, NamedSharding(mesh, P("model", None)))'))}),
}


CATALOGUE = Catalogue("mesh", WRONG, RIGHT, intact="dot")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_mesh_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_mesh_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
