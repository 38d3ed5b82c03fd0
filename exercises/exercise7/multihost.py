"""Task multihost (extra credit): one mean over rows that live in different processes.

On a cluster every host runs its own copy of your program (a *process*). Each process sees only
its own devices (``jax.local_devices()``) and holds only its own part of the data, yet
``jax.devices()`` lists the devices of every process, and one jitted computation can span them all.

Write ``global_mean(local_batch)``: ``local_batch`` is this process's rows, shape
``(rows, features)``, float32. Every process must return the mean over *all* rows of *all*
processes, shape ``(features,)``, float32 (the dtype is part of the answer). Every process must do
the same: when the row counts differ, every process raises, not only those that notice (the others
would wait for them in a collective forever).

    # process 0 holds [[1., 2.], [3., 4.]], process 1 holds [[5., 6.], [7., 8.]]
    >>> global_mean(local_batch)        # the same answer on both processes
    Array([4., 5.], dtype=float32)

How:
  1. Every process must hold the same number of rows (a multiple of jax.local_device_count()).
     Check it: ``jax.experimental.multihost_utils.process_allgather(row_count)`` gives every
     process's count. If they differ, raise ValueError naming the counts, e.g. "every process must
     hold the same number of rows; they hold [2, 4]". Do not skip this: with uneven rows JAX
     quietly builds a *different* global array on each process.
  2. Make a mesh over the devices of all processes: ``Mesh(np.array(jax.devices()), ("batch",))``.
  3. ``jax.make_array_from_process_local_data(NamedSharding(mesh, P("batch")), local_batch)``
     is one global array of shape (processes * rows, features); each process contributes its rows.
  4. Take the mean over axis 0 inside ``jax.jit`` with ``out_shardings=NamedSharding(mesh, P())``:
     the result is replicated, so every process holds all of it and can return it.

The grader runs your function as 2 processes x 2 devices and as 4 processes x 1 device, joined by
``jax.distributed`` on one machine. Extra credit: its points come on top of the exercise's.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def global_mean(local_batch):
    raise NotImplementedError("global_mean: check the row counts agree, build one global array, mean over axis 0")


if __name__ == "__main__":  # python multihost.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
