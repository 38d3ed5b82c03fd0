"""Reference solution for task layouts (see exercises/exercise8/layouts.py for the task)."""

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def data_model_mesh(model):
    n = jax.device_count()
    if model < 1 or n % model:
        raise ValueError(f"{model} devices along 'model' do not divide the {n} devices")
    return jax.make_mesh((n // model, model), ("data", "model"))


def place_batch(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P(("data", "model"), None)))


def place_weights(w, mesh):
    return jax.device_put(w, NamedSharding(mesh, P(None, "model")))


def shard_shape(x):
    return x.sharding.shard_shape(x.shape)


def block_of(x, device):
    index = x.sharding.devices_indices_map(x.shape)[device]
    return tuple(index_range.indices(size)[:2] for index_range, size in zip(index, x.shape))


def copies(x):
    blocks = {tuple(s.indices(n)[:2] for s, n in zip(index, x.shape))
              for index in x.sharding.devices_indices_map(x.shape).values()}
    return len(x.sharding.device_set) // len(blocks)
