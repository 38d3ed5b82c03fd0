"""Task train: data-parallel SGD for linear regression (the chapter's "Distributed Training").

Every device holds the same parameters and its own shard of the batch. Each step, every device
computes the gradient on its shard, the gradients are averaged across devices with ``lax.pmean``,
and every device applies the same update, so the replicas stay identical and the step equals one
full-batch SGD step on a single device. Shapes: d features, b samples per device, n devices.

1. ``loss_fn(params, batch)``: params (d,), batch = (x (b, d), y (b,)). Return the mean squared
   error of the predictions ``x @ params`` as a scalar. The data are float32, and so is every array
   you return: the dtype is part of the answer.

2. ``train_step(params, batch, lr)``: the pmapped step. params (n, d) (one replica per device),
   batch = (X (n, b, d), y (n, b)), lr a Python float, the same for every device. Return
   ``(new_params, loss)``: new_params (n, d) = params - lr * (gradient averaged over devices), the
   same on every device; loss (n,) = the loss at the *old* params averaged over devices (pmean it
   too), so every device reports the loss of the whole batch. Define it as

       train_step = jax.pmap(per_device_step, axis_name="batch", in_axes=(0, 0, None))

3. ``replicate(params, n_devices)``: params (d,) -> (n_devices, d), one copy per device.

4. ``fit(params, X, y, steps, lr)``: params (d,), X (N, d), y (N,). With n = jax.device_count(),
   keep the first n * (N // n) samples (drop the remainder, as a data loader's drop_last does),
   split them into n equal shards (X (n, N // n, d)), replicate params, run ``steps`` train_steps.
   Return ``(params, losses)``: params (d,) from device 0, losses (steps,) the loss before each
   step. Call ``jax.block_until_ready`` on the params every 10 steps or so: JAX dispatches steps
   asynchronously, and hundreds of queued collective steps on emulated CPU devices can stall.

The chapter's example fails twice on current JAX (0.10):
  * ``pred = params @ x`` contracts the d parameters with the b samples: a TypeError about
    contracting dimensions. The predictions are ``x @ params``, (b, d) @ (d,) -> (b,).
  * ``jax.pmap(train_step, axis_name='batch')`` maps *every* argument over devices, including the
    scalar lr: "only valid for values of rank at least 1". lr is one number for all devices: say so
    with ``in_axes=(0, 0, None)`` (or ``static_broadcasted_argnums=2``).
It also returns each device's own loss; pmean the loss as well.

Average with ``lax.pmean``, not ``lax.psum``: a psum of n gradients takes a step n times too big.
The grader compares your step with a float64 full-batch step on 1, 2, 4 and 8 devices, and reads
the compiled step: each device may send only its gradient and its loss, never its data, and works
on its own shard of the batch only: at most 1.5 times the arithmetic one device of the reference
solution does (the report gives both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it;
and no more than a quarter of that arithmetic written around the pmap, where XLA splits it by
itself: the pmap does the work). Nothing else moves: no collective of a kind the reference
solution does not run (a reduce-scatter of copies of the gradient is one), and in each kind no more
than 1.5 times the bytes its collectives move (the report lists both).

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp
from jax import lax


def loss_fn(params, batch):
    raise NotImplementedError("loss_fn: mean squared error of x @ params against y")


def train_step(params, batch, lr):
    raise NotImplementedError("train_step: jax.pmap a per-device step with in_axes=(0, 0, None)")


def replicate(params, n_devices):
    raise NotImplementedError("replicate: one copy of params per device, shape (n_devices, d)")


def fit(params, X, y, steps, lr):
    raise NotImplementedError("fit: shard the data, replicate params, run train_step steps times")


if __name__ == "__main__":  # python train.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
