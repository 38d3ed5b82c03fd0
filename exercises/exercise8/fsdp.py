"""Task fsdp: one training step with fully sharded parameters (FSDP, ZeRO stage 3).

Data parallelism (exercise 7's train) keeps a whole copy of the parameters on every device and
all-reduces the gradient: n copies in memory. FSDP splits the parameters as well as the batch:
every device keeps only its 1 / n of them, and in each step

  1. all-gathers the parameters just before it uses them (the whole w exists only inside the step),
  2. computes the gradient of the loss on its own part of the batch,
  3. reduce-scatters the gradient: it receives the sum over devices of *its rows* of the gradient
     only, and updates only its rows.

An all-gather plus a reduce-scatter move what one all-reduce moves, so FSDP communicates as much as
data parallelism, for 1 / n of the parameter memory.

The model is linear regression with a matrix: ``loss(w) = mean((x @ w - y) ** 2)`` over all B x F
entries, with w (D, F), x (B, D), y (B, F). Write ``fsdp_step(w, x, y, lr, mesh)``: the arrays
arrive as NumPy; the mesh has one axis, 'data', over every device; lr is a Python float. Place w,
x and y with their rows split over 'data' (P('data', None); when the grader reads your compiled
program it hands them over already split like that) and return ``(new_w, loss)``: new_w =
w - lr * (gradient of the loss over the whole batch), laid out P('data', None), and the loss at
the old w, a scalar. The step equals one full-batch step on a single device.

With ``jax.shard_map`` (in_specs P('data', None) for all three, out_specs (P('data', None), P())):
gather w inside the function you differentiate, ``lax.all_gather(w_block, "data", axis=0,
tiled=True)``, and take ``jax.value_and_grad`` with respect to w_block: JAX differentiates an
all_gather into a psum_scatter, so the gradient you get is already reduce-scattered. (Or take the
gradient with respect to the gathered w and call ``lax.psum_scatter`` yourself.) Each device's loss
and gradient are those of its own part of the batch: average them over the devices.

    >>> mesh = jax.make_mesh((4,), ("data",))
    >>> w, loss = fsdp_step(np.zeros((4, 1)), np.ones((8, 4)), np.ones((8, 1)), 0.1, mesh)
    >>> w.sharding.spec, float(loss), np.asarray(w)[:, 0]
    (P('data', None), 1.0, array([0.2, 0.2, 0.2, 0.2], dtype=float32))

The grader compares the step with a float64 one on a single device, at 1, 2, 4 and 8 devices, and
reads the compiled step: one all-gather of w's blocks and one reduce-scatter of the gradient (or the
same by hand: an all_to_all of its row blocks, summed where they arrive), over 'data'; an all-reduce may carry the loss, never the gradient; and new_w leaves every device with its
D / n rows only; and no device does more than 1.5 times the arithmetic one device of the
reference solution does (the report gives both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it): each takes the gradient of its own rows
of the batch only. No collective of another kind than the reference solution's (an all_to_all
counts as its reduce-scatter), and in each kind no more than 1.5 times the bytes its collectives
move (the report lists both): a reduce-scatter of n copies of the gradient is an all-reduce by
another name.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def fsdp_step(w, x, y, lr, mesh):
    raise NotImplementedError("fsdp_step: all-gather w, value_and_grad, reduce-scatter the gradient")


if __name__ == "__main__":  # python fsdp.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
