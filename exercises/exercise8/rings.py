"""Task rings: an all-gather and a reduce-scatter, each from n - 1 ppermutes around a ring.

``jax.shard_map(f, mesh=mesh, in_specs=..., out_specs=...)`` runs f once per device on that device's
block (the *per-device* view), and f moves data with collectives it names by mesh axis. These two
functions are per-device functions like exercise 7's rings, now inside shard_map. The grader wraps
them itself, over the 'model' axis of a ('data', 'model') mesh:

    f = jax.shard_map(lambda b: ring_all_gather(b, "model"), mesh=mesh,
                      in_specs=P(("data", "model")), out_specs=P(("data", "model")))

so each mesh row is one ring: the devices (i, 0), (i, 1), ... pass blocks among themselves, and the
rows run their rings side by side. Use the ``axis_name`` you are given, ``lax.axis_size`` for the
ring's length n (the devices along that axis, not ``jax.device_count()``) and ``lax.axis_index``
for your place on it.

1. ``ring_all_gather(block, axis_name)``: block (k, ...) on each device. Return (n * k, ...): every
   device's block, in ring order (device 0's first), on every device, as
   ``lax.all_gather(block, axis_name, tiled=True)`` returns it. Pass the blocks around: at each
   step every device sends the block it received last to its neighbour (i -> i + 1) and keeps what
   arrives; after n - 1 steps each device has seen every block.

       >>> mesh = jax.make_mesh((1, 2), ("data", "model"))      # one ring of 2 devices
       >>> rows = P(("data", "model"))                           # device j's block: rows of x
       >>> gather = jax.shard_map(lambda b: ring_all_gather(b, "model"), mesh=mesh,
       ...                        in_specs=rows, out_specs=rows)
       >>> gather(jax.device_put(jnp.array([[0.], [1.]]), NamedSharding(mesh, rows)))
       Array([[0.],
              [1.],
              [0.],
              [1.]], dtype=float32)                                # device 0's result, then device 1's

2. ``ring_reduce_scatter(x, axis_name)``: x (n * k, ...) on each device. Return (k, ...): device j
   gets the sum over all devices of rows j*k:(j+1)*k, as ``lax.psum_scatter(x, axis_name,
   scatter_dimension=0, tiled=True)`` returns it. Cut x into n chunks; at each step every device
   sends a running sum of one chunk to its neighbour, who adds its own copy of that chunk; choose the
   order so that after n - 1 steps device j holds the whole sum of chunk j.

       >>> scatter = jax.shard_map(lambda b: ring_reduce_scatter(b, "model"), mesh=mesh,
       ...                         in_specs=rows, out_specs=rows)
       >>> scatter(jax.device_put(jnp.array([[1.], [2.], [10.], [20.]]), NamedSharding(mesh, rows)))
       Array([[11.],
              [22.]], dtype=float32)                               # 1 + 10 on device 0, 2 + 20 on 1

Each uses ``lax.ppermute`` only (no all_gather, psum or psum_scatter): n - 1 ppermutes, each of
one block (one chunk), so every device sends (n - 1) / n of the data, which is what the built-in
collectives cost (a ring that runs both ways at once, half of each chunk each way, may use n - 1
ppermutes per direction, as long as they carry n - 1 chunks in all). The grader reads the compiled
program and counts the ppermutes and their bytes, on meshes of several shapes (a ring of one device
sends nothing), and follows what each one sends: after the first step, a ring passes on what
arrived at the step before (a device sending its own block 1, 2, ... places along, n - 1 direct
sends, is no ring), and every step sends to the same neighbour (swapping with partners 1, 2, 4
places away, recursive doubling, is another algorithm). A Python ``for`` loop over
``range(1, n)`` is fine: n is a Python int.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax.numpy as jnp
from jax import lax


def ring_all_gather(block, axis_name):
    raise NotImplementedError("ring_all_gather: n - 1 ppermutes, keeping each block that arrives")


def ring_reduce_scatter(x, axis_name):
    raise NotImplementedError("ring_reduce_scatter: n - 1 ppermutes of running chunk sums")


if __name__ == "__main__":  # python rings.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
