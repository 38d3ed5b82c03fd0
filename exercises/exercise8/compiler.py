"""Task compiler: let the compiler partition a matmul, and choose the layout that decides what it sends.

With ``jax.jit`` you write the computation as if for one big device. The compiler (XLA's SPMD
partitioner) writes the program each device runs, from where the inputs live and where you ask
the result to be (``out_shardings``), and adds the collectives that moving data between them needs.
So for y = x @ w the layouts decide the communication:

  * x's rows split over 'data' and w's columns over 'model': the device at (i, j) holds x's rows i
    and w's columns j, so it can compute the block (i, j) of y alone. Any other place for y means
    moving blocks of it.
  * x's columns and w's rows split over 'model' (the contraction is split): a device multiplies the
    columns of x and the rows of w it holds and gets a *partial sum* of its rows of y; the partial
    sums of one mesh row add up to y. Adding them is a reduction: an all-reduce (or a
    reduce-scatter, when y stays split), over 'model'.

In this task the mesh's axes are Auto (the compiler chooses; jax.make_mesh's default, Explicit,
puts layouts in the types, see the JAX docs' "Explicit sharding"). The grader builds the mesh
with ``jax.make_mesh(shape, ("data", "model"), axis_types=(AxisType.Auto,) * 2)`` and hands your
function x and w already laid out as each part says (inside jit that is
``jax.lax.with_sharding_constraint``; outside it, ``jax.device_put``). Leave them where they are:
return ``jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P(...)))(x, w)``, and choose the P.

    >>> mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    >>> x = jax.device_put(jnp.ones((4, 6)), NamedSharding(mesh, P("data", None)))
    >>> w = jax.device_put(jnp.ones((6, 8)), NamedSharding(mesh, P(None, "model")))
    >>> whole = jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P()))   # y whole on every device
    >>> whole(x, w).sharding.spec, "all-gather" in whole.lower(x, w).compile().as_text()
    (P(), True)

That is how to see what your own program sends: its compiled text names every collective.

1. ``no_collective(x, w, mesh)``: x (B, D) arrives as P('data', None), w (D, F) as P(None, 'model').
   Return x @ w, with out_shardings such that the program runs no collective at all, and no device
   holds more of y than its share (1 / n_devices of it).

2. ``one_reduction(x, w, mesh)``: x (B, D) arrives as P('data', 'model'), w (D, F) as P('model', None).
   Return x @ w, with out_shardings such that the program runs exactly one collective: the sum of
   the partial products over 'model'. A y that is whole on every device, P(), needs a second one.

B, D and F divide the mesh's axes. The grader compiles each on meshes of several shapes (1 x 2,
2 x 1, 2 x 2, 1 x 4, 2 x 4, 4 x 2) and reads the compiled program: which collectives run, over
which mesh axis, how much of y each device holds, and that no device does more than 1.5 times
the arithmetic one device of the reference solution does (the report gives both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it). Forgetting out_shardings is not always
wrong: the compiler then chooses a layout for y itself; check which it chose with ``.sharding``
on the result.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def no_collective(x, w, mesh):
    raise NotImplementedError("no_collective: jax.jit(jnp.matmul, out_shardings=...) with y where it is computed")


def one_reduction(x, w, mesh):
    raise NotImplementedError("one_reduction: jax.jit(jnp.matmul, out_shardings=...) with one sum over 'model'")


if __name__ == "__main__":  # python compiler.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
