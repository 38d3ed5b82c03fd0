"""Wrong submissions for task mesh: each loses points on mesh, says why, and leaves dot at full points."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

MESH = 'return jax.make_mesh((n_rows, n_cols), ("data", "model"))'
SHARDING = 'NamedSharding(mesh, P("data", "model"))'

WRONG = {
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
        "4", says=("psum adds up over 'data' (devices in the same mesh column)",)),
    "a plain matmul, no shard_map": Wrong(
        {"mesh": mutate("mesh", ("return row_parallel(shard_matrix(x, mesh), w)", "return x @ w"))},
        "4", says=("runs 0 psums of its own, expected exactly one",)),
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
