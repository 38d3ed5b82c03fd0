"""Task basics: your first jax.pmap programs (the chapter's first examples).

jax.pmap(f) runs f once on every device. With n = jax.device_count(), an input of shape (n, ...)
hands its row d to device d, and the outputs come back stacked along a leading axis of length n,
one row per device. Write three functions, each a jax.pmap of a small per-device function.

square_plus_one(x) -> shape of x
    x**2 + 1, elementwise. x has shape (n, ...).

        >>> square_plus_one(jnp.arange(6.).reshape(2, 3))                   # on 2 devices
        Array([[ 1.,  2.,  5.],
               [10., 17., 26.]], dtype=float32)

per_device_sum(x) -> shape (n,)
    Device d sums every number of its own block x[d], and nothing else: no communication between
    devices. x has shape (n, ...).

        >>> per_device_sum(jnp.arange(10.).reshape(2, 5))                  # on 2 devices
        Array([10., 35.], dtype=float32)

per_device_matmul(X, Y) -> shape (n, a, c)
    Device d multiplies its own matrices, X[d] @ Y[d]. X has shape (n, a, b), Y has (n, b, c).

        >>> per_device_matmul(jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))).shape   # on 2 devices
        (2, 3, 5)

Each result keeps x's dtype, which is part of the answer: int32 numbers give int32 results (x**2 + 1
of ints is ints; a float literal such as 2.0 would turn them into floats).

Return what jax.pmap returns, a jax.Array whose rows live on n different devices, not a NumPy
copy. The grader checks where the rows live: jax.vmap gives the same numbers on one device only
(the chapter's "vmap vs pmap"). It also compiles each function with jax.jit and reads the program
for the jax.pmap, and for each device working on its own row (at most 1.5 times the arithmetic one
device of the reference solution does; the report gives both counts; the same bound holds for the
share of each input a device's pmap receives;
and no more than a quarter of that arithmetic written around the pmap, where XLA splits it by
itself: the pmap does the work): a Python loop that computes on one
device and copies the rows out with jax.device_put puts the right numbers in the right places, but
no device computed anything. So keep to jax.numpy and to checks of shapes, which jax.jit can trace.

pmap still works on current JAX (0.10.2), where it is built from jax.jit and jax.shard_map and its
own documentation recommends shard_map for new code; this exercise uses pmap as the chapter does,
and the mesh task teaches shard_map.

The chapter's Gotcha 1 on current JAX: the leading axis must equal the device count, but pmap no
longer says so clearly. With 4 devices, a leading axis of 5 or 6 raises an IndivisibleError about
sharding tiles, 8 raises "cannot select an axis to squeeze out", and 3 raises nothing at all: pmap
quietly runs on 3 of the 4 devices. So each function checks its inputs first: if the leading axis
of x (of X, or of Y) is not jax.device_count(), raise ValueError with a message that names both
numbers, e.g. "x has leading axis 5, but there are 4 devices: reshape it to (4, ...)".

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp


def square_plus_one(x):
    raise NotImplementedError("square_plus_one: x**2 + 1 on every device")


def per_device_sum(x):
    raise NotImplementedError("per_device_sum: each device sums its own block")


def per_device_matmul(X, Y):
    raise NotImplementedError("per_device_matmul: X[d] @ Y[d] on device d")


if __name__ == "__main__":  # python basics.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
