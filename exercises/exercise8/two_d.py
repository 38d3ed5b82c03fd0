"""Task two_d (extra credit): 2-D parallelism, FSDP over 'data' and tensor parallelism over 'model', in one step.

The MLP of tensor_parallel, y = relu(x @ w1) @ w2, trained on the squared error
``loss = mean((relu(x @ w1) @ w2 - y) ** 2)`` over all B x F entries. On a ('data', 'model') mesh:

    w1 (D, H)  P('data', 'model')   columns over 'model' (column-parallel), rows over 'data' (FSDP)
    w2 (H, F)  P('model', 'data')   rows over 'model' (row-parallel), columns over 'data' (FSDP)
    x (B, D), y (B, F)  P('data', None)   the batch over 'data'

so a device keeps 1 / n_devices of each weight. In each step a device all-gathers over 'data' the
FSDP part of each weight (w1's rows, w2's columns), runs tensor_parallel's forward pass on its part of
the batch (one psum over 'model'), and differentiates it: as in fsdp, the gradient of each weight
block comes back reduce-scattered over 'data'; average over 'data' and update its own blocks.

Write ``train_step(w1, w2, x, y, lr, mesh)``: the arrays arrive as NumPy, lr a Python float. Return
``(new_w1, new_w2, loss)``: the weights after one full-batch SGD step, laid out as above, and the
loss at the old weights, a scalar.

    >>> mesh = jax.make_mesh((2, 2), ("data", "model"))
    >>> w1, w2, loss = train_step(np.ones((2, 4)), np.ones((4, 2)), np.ones((4, 2)), np.zeros((4, 2)),
    ...                           0.001, mesh)
    >>> w1.sharding.spec, w2.sharding.spec, float(loss), np.asarray(w2)[0, 0].round(4)
    (P('data', 'model'), P('model', 'data'), 64.0, np.float32(0.984))

The grader compares the step with a float64 one on a single device at 1, 2, 4 and 8 devices, on
meshes of several shapes, and reads the compiled step: weights gathered and gradients
reduce-scattered over 'data' only, the activations' partial sums all-reduced over 'model', no
gradient in an all-reduce, and each device left with its blocks of the new weights only. It counts
only the collectives your answer depends on, and needs at least one all-gather over 'data' and one
sum over 'model' among them: a step computed whole on every device has neither. No device may do
more than 1.5 times the arithmetic one device of the reference solution does (the report gives
both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it), and no collective of a
kind the reference solution does not run, nor in one kind more than 1.5 times the bytes its
collectives move (the report lists both).

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def train_step(w1, w2, x, y, lr, mesh):
    raise NotImplementedError("train_step: gather over 'data', psum over 'model', gradients scattered over 'data'")


if __name__ == "__main__":  # python two_d.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
