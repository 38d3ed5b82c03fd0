"""Task layouts: meshes, PartitionSpecs, and reading a layout back from the array.

A mesh arranges the devices in a grid whose axes have names; here ('data', 'model'): a row of the
grid is a group of devices that split a model between them, and the rows split the batch. A
``NamedSharding(mesh, P(...))`` lays an array out on the mesh: its PartitionSpec ``P`` has one
entry per array dimension, saying which mesh axes that dimension is split over (None: not split).
A dimension split over no axis is *replicated* along the axes the spec leaves out: every device
along them holds the same block. ``P(('data', 'model'), None)`` splits the rows over both axes at
once, 'data' first: the device at mesh position (i, j) holds row block i * n_model + j.

    >>> jax.config.update("jax_num_cpu_devices", 4)
    >>> mesh = data_model_mesh(2)                      # 2 x 2: 'data' 2, 'model' 2
    >>> w = place_weights(jnp.zeros((3, 8)), mesh)
    >>> shard_shape(w), copies(w), block_of(w, mesh.devices[1, 1])
    ((3, 4), 2, ((0, 3), (4, 8)))

1. ``data_model_mesh(model)``: a mesh with axes ('data', 'model') that uses every device once, with
   ``model`` devices along 'model' and the rest along 'data' (``jax.device_count() // model``).
   ``jax.make_mesh(shape, names)`` builds it. If ``model`` does not divide the device count, raise
   ValueError naming ``model`` and the device count (no mesh fits).

2. ``place_batch(x, mesh)``: x (B, F), B a multiple of the device count. Return x on the mesh with
   its rows split over every device, 'data' first, then 'model': ``jax.device_put(x,
   NamedSharding(mesh, P(('data', 'model'), None)))``. Each device then holds B / n_devices rows.

3. ``place_weights(w, mesh)``: w (D, F), F a multiple of the 'model' size. Return w with its columns
   split over 'model' and replicated over 'data': each device of a mesh row holds one block of
   columns, and every mesh row holds the same blocks.

Then three questions about an array the grader lays out on a mesh, each answered from the array
alone (its ``.sharding``), whatever the mesh and the PartitionSpec:

4. ``shard_shape(x)``: the shape of the block each device holds, as a tuple of ints.
   ``x.sharding.shard_shape(x.shape)`` knows it.

5. ``block_of(x, device)``: which part of x the given ``jax.Device`` holds, as one
   ``(start, stop)`` pair per dimension of x: ``((0, 3), (4, 6))`` is ``x[0:3, 4:6]``.
   ``x.sharding.devices_indices_map(x.shape)`` maps each device to a tuple of slices; a slice of a
   whole dimension is ``slice(None)``, which is (0, size) (``s.indices(size)[:2]`` gives the pair).

6. ``copies(x)``: how many devices hold each element of x (1 if no two devices hold the same
   block; ``jax.device_count()`` if every device holds all of x).

The grader builds meshes of every shape the device count allows (1 x 1, 1 x 2, 2 x 1, 2 x 2, ...),
checks ``.sharding`` and the block each device holds, not only the values, and draws the layout
it expected next to yours when they differ.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def data_model_mesh(model):
    raise NotImplementedError("data_model_mesh: jax.make_mesh((devices // model, model), ('data', 'model'))")


def place_batch(x, mesh):
    raise NotImplementedError("place_batch: rows over ('data', 'model') together")


def place_weights(w, mesh):
    raise NotImplementedError("place_weights: columns over 'model', replicated over 'data'")


def shard_shape(x):
    raise NotImplementedError("shard_shape: the shape of one device's block")


def block_of(x, device):
    raise NotImplementedError("block_of: the (start, stop) of each dimension that device holds")


def copies(x):
    raise NotImplementedError("copies: how many devices hold each element")


if __name__ == "__main__":  # python layouts.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
