"""Task shard: cut a batch into one block per device, pad when it does not divide, and put it back.

pmap wants inputs of shape (n_devices, ...), but data arrives as a batch of B rows. Write three
functions that move between the two layouts. They only reshape and pad; they take n_devices as an
argument instead of asking JAX, so you can try them with any number. Use jax.numpy or NumPy.

shard_batch(x, n_devices) -> shape (n_devices, B // n_devices, ...)
    x has shape (B, ...) and B is a multiple of n_devices. Device d gets the consecutive rows
    d * per .. (d + 1) * per - 1, where per = B // n_devices (device 0 the first rows, in order).
    If B is not a multiple of n_devices, raise ValueError with a message that names B and
    n_devices (and points to pad_and_shard).

        >>> shard_batch(jnp.arange(6), 2)
        Array([[0, 1, 2],
               [3, 4, 5]], dtype=int32)

pad_and_shard(x, n_devices) -> (sharded, mask)
    x has shape (B, ...), any B >= 1. Pad x at the end with zero rows up to the next multiple of
    n_devices, then shard it as above: sharded has shape (n_devices, per, ...) with
    per = ceil(B / n_devices). mask is a bool array of shape (n_devices, per), True exactly where
    sharded holds a real row of x and False on the padding, so that a later reduction can leave
    the padding out.

        >>> sharded, mask = pad_and_shard(jnp.arange(5.), 2)
        >>> sharded
        Array([[0., 1., 2.],
               [3., 4., 0.]], dtype=float32)
        >>> mask
        Array([[ True,  True,  True],
               [ True,  True, False]], dtype=bool)

unshard(x) -> shape (n_devices * per, ...)
    The inverse of shard_batch: x has shape (n_devices, per, ...) (for example what a pmap
    returns) and the result stacks the devices' rows back in order. So
    unshard(shard_batch(x, n)) equals x, and after pad_and_shard the real rows are
    unshard(sharded)[:B] (or unshard(sharded)[unshard(mask)]).

All three keep x's dtype, which is part of the answer: an int32 batch of token ids, a uint8 batch of
pixels or a bfloat16 batch of activations comes back int32, uint8 or bfloat16, padding included (pad
with zeros of x.dtype; jnp.pad does). A real row may be all zeros, so the mask marks real rows by
their position (the first B), never by their values, and unshard keeps every row it is given,
padding included: leaving the padding out is the mask's job.

The chapter's Gotcha 1 says the leading axis must equal the device count; these functions are how
real code meets that rule. The grader tries batches whose size is not a multiple of the device
count, batches smaller than it, rows of zeros, and int, uint8, bfloat16 and bool batches.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax.numpy as jnp


def shard_batch(x, n_devices):
    raise NotImplementedError("shard_batch: (B, ...) -> (n_devices, B // n_devices, ...)")


def pad_and_shard(x, n_devices):
    raise NotImplementedError("pad_and_shard: pad with zero rows, shard, and a mask of the real rows")


def unshard(x):
    raise NotImplementedError("unshard: (n_devices, per, ...) -> (n_devices * per, ...)")


if __name__ == "__main__":  # python shard.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
