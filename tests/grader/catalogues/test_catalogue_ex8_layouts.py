"""Wrong submissions for exercise 8's task layouts: each loses points on layouts, says why, and leaves fsdp whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

MESH = 'jax.make_mesh((n // model, model), ("data", "model"))'
BATCH = 'P(("data", "model"), None)'
WEIGHTS = 'P(None, "model")'


def layouts(*edits):
    return {"layouts": mutate("layouts", *edits, exercise="exercise8")}


WRONG = {
    "mesh axes named the other way round": Wrong(
        layouts((MESH, 'jax.make_mesh((n // model, model), ("model", "data"))')), devices="4",
        says=("has axis names ('model', 'data')", "expected ('data', 'model')")),
    "mesh shape the other way round": Wrong(
        layouts((MESH, 'jax.make_mesh((model, n // model), ("data", "model"))')), devices="4",
        says=("the device grid of data_model_mesh(4) on 4 devices returned shape (4, 1)", "expected shape (1, 4)")),
    "no check that model divides the devices": Wrong(
        layouts(("    if model < 1 or n % model:\n"
                  "        raise ValueError(f\"{model} devices along 'model' do not divide the {n} devices\")\n", "")),
        devices="4",
        says=("data_model_mesh(3) on 4 devices returned a value, expected it to raise ValueError",)),
    "batch rows split over 'data' only": Wrong(
        layouts((BATCH, 'P("data", None)')), devices="4",
        says=("place_batch(x, mesh) on a 2 x 2 mesh is laid out as P('data', None)", "rows split over every device")),
    "weights split over 'data'": Wrong(
        layouts((WEIGHTS, 'P(None, "data")')), devices="4",
        says=("place_weights(w, mesh) on a 2 x 2 mesh is laid out as P(None, 'data')", "columns split over 'model'")),
    "shard_shape of the whole array": Wrong(
        layouts(("return x.sharding.shard_shape(x.shape)", "return x.shape")), devices="4",
        says=("shard_shape(x) returned (8, 12)", "expected (4, 6)")),
    # Round 51 (written apart): the devices counted, not the devices per block; round 61: the blocks counted. Where
    # the spec splits over every axis the two are as many, and the message once said the other was counted: it
    # says both counts and what copies is made of.
    "copies counts the devices": Wrong(
        layouts(("    return len(x.sharding.device_set) // len(blocks)", "    return len(x.sharding.device_set)")),
        devices="2", says=("copies(x) returned 2", "2 is both how many devices the array is on and how many "
                           "different blocks they hold",
                           "the number of devices divided by the number of different blocks")),
    "copies counts the blocks": Wrong(
        layouts(("    return len(x.sharding.device_set) // len(blocks)", "    return len(blocks)")),
        devices="2", says=("copies(x) returned 2", "2 is both how many devices the array is on and how many "
                           "different blocks they hold",
                           "the number of devices divided by the number of different blocks")),
    "block_of returns the slices": Wrong(
        layouts(("    return tuple(index_range.indices(size)[:2] for index_range, size in zip(index, x.shape))",
                 "    return index")), devices="4",
        says=("block_of(x, device) for device 0", "one (start, stop) pair per dimension")),
}

RIGHT = {
    "block_of from the array's own shards": Right(layouts((
        "    index = x.sharding.devices_indices_map(x.shape)[device]\n"
        "    return tuple(index_range.indices(size)[:2] for index_range, size in zip(index, x.shape))",
        "    shard = next(s for s in x.addressable_shards if s.device == device)\n"
        "    return tuple((s.start or 0, n if s.stop is None else s.stop) for s, n in zip(shard.index, x.shape))")),
        devices="4"),
    "copies from the PartitionSpec and a mesh with Auto axes": Right(layouts(
        (MESH, 'jax.make_mesh((n // model, model), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)'),
        ("    blocks = {tuple(s.indices(n)[:2] for s, n in zip(index, x.shape))\n"
         "              for index in x.sharding.devices_indices_map(x.shape).values()}\n"
         "    return len(x.sharding.device_set) // len(blocks)",
         "    spec = x.sharding.spec\n"
         "    named = {a for entry in spec if entry for a in ((entry,) if isinstance(entry, str) else entry)}\n"
         "    mesh = x.sharding.mesh\n"
         "    return int(np.prod([size for a, size in mesh.shape.items() if a not in named]))"),
        ("import jax\n", "import jax\nimport numpy as np\n")), devices="4"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="layouts", intact="fsdp", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_layouts_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_layouts_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
