"""Reference solution for task multihost (see exercises/exercise7/multihost.py for the task)."""

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def global_mean(local_batch):
    local_batch = np.asarray(local_batch)
    counts = multihost_utils.process_allgather(np.int32(local_batch.shape[0])).tolist()
    if len(set(counts)) != 1:
        raise ValueError(f"every process must hold the same number of rows; they hold {counts}")
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    rows = jax.make_array_from_process_local_data(NamedSharding(mesh, P("batch")), local_batch)
    mean = jax.jit(lambda x: x.mean(axis=0), out_shardings=NamedSharding(mesh, P()))
    return mean(rows)
