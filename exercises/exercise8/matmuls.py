"""Task matmuls: the four cases of a sharded matrix product, each with the cheapest collective.

y = x @ w with x (B, D) and w (D, F) laid out on a ('data', 'model') mesh. Where the contraction
dimension D lives decides what must move:

  case 1  x P('data', None),          w P(None, 'model')  ->  y P('data', 'model')
          D is whole on every device: each device multiplies what it holds. Nothing moves.
  case 2  x P('data', 'model'),       w P(None, 'model')  ->  y P('data', 'model')
          D is split on one operand (x's columns): a device has all of w's rows but only some of
          x's columns.
  case 3  x P('data', 'model'),       w P('model', None)  ->  y P('data', 'model')
          D is split on both, the same way: a device can multiply what it holds, and gets a partial
          sum of its rows of y, over all of y's columns.
  case 4  x P(('data', 'model'), None), w P(None, 'model')  ->  y P(('data', 'model'), None)
          D is whole, but x's rows and w's columns are split over the same axis, 'model': the
          devices of a mesh row hold different rows of x and different columns of w, and each must
          return all of y's columns for its rows.

Write ``matmul_case1(x, w, mesh)`` ... ``matmul_case4(x, w, mesh)``: x and w arrive as NumPy arrays;
place them as the case says (``jax.device_put(x, NamedSharding(mesh, spec))``; when the grader
reads your compiled program it hands them over already split like that, so computing on whole
copies would first gather them, and the grader counts that gather), and compute y with
``jax.shard_map(per_device, mesh=mesh, in_specs=(x_spec, w_spec), out_specs=y_spec)``, where
``per_device(x_block, w_block)`` multiplies blocks and uses at most one collective over 'model':
``lax.all_gather(a, "model", axis=..., tiled=True)`` (each device receives the others' blocks),
``lax.psum(a, "model")`` (sums, every device gets the whole sum) or ``lax.psum_scatter(a, "model",
scatter_dimension=..., tiled=True)`` (sums, each device gets only its block of the sum; or the same
by hand: an all_to_all of the sum's blocks, summed where they arrive). Pick the one
that moves the fewest bytes and leaves y in the layout the case asks for. Return y.

    >>> mesh = jax.make_mesh((2, 2), ("data", "model"))
    >>> x, w = jnp.ones((4, 6)), jnp.ones((6, 8))
    >>> y = matmul_case1(x, w, mesh)
    >>> y.sharding.spec, y.addressable_shards[0].data.shape     # device 0 holds block (0, 0)
    (P('data', 'model'), (2, 4))

A collective over a mesh axis of one device moves nothing, and 'data' never needs one here.
The grader runs each case on meshes of several shapes (1 x 2, 2 x 1, 2 x 2, 1 x 4, ...), checks
y, and reads the compiled program: exactly the one collective each case needs (none in case 1),
over 'model', with the bytes it moves, each device holding only its block of y, and no device
doing more than 1.5 times the arithmetic one device of the reference solution does (the report
gives both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it;
and no more than a quarter of that arithmetic written around the shard_map, where XLA splits it by
itself: the shard_map does the work). ``jax.jit``
with shardings computes the same y, with XLA choosing the collectives; this task is about choosing
them yourself, and shard_map's per-device code shows each one, so write these with shard_map: a
case computed without one keeps its value points and gets no structural point.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def matmul_case1(x, w, mesh):
    raise NotImplementedError("matmul_case1: D whole on every device")


def matmul_case2(x, w, mesh):
    raise NotImplementedError("matmul_case2: D split on x only")


def matmul_case3(x, w, mesh):
    raise NotImplementedError("matmul_case3: D split on x and w")


def matmul_case4(x, w, mesh):
    raise NotImplementedError("matmul_case4: x's rows and w's columns both split over 'model'")


if __name__ == "__main__":  # python matmuls.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
