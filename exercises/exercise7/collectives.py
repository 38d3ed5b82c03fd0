"""Task collectives: psum, pmean and pmax, so that every device holds the same answer.

Inside jax.pmap(f, axis_name="i"), lax.psum(v, "i") adds v over all devices and hands every
device the total: an all-reduce. lax.pmean and lax.pmax do the same for the mean and the maximum.
Below, n = jax.device_count() and row d of an input lives on device d.

The inputs are float32, and so are the results: the dtype is part of the answer.

all_reduce_stats(x) -> (total, mean, maximum)
    x has shape (n, k). Return three arrays of shape (n, k). Row d of each is what device d holds
    after an all-reduce over the devices, so every row of total is x.sum(axis=0), every row of
    mean is x.mean(axis=0) and every row of maximum is x.max(axis=0).

        >>> total, mean, maximum = all_reduce_stats(jnp.array([[1., 5.], [3., 2.]]))  # 2 devices
        >>> total
        Array([[4., 7.],
               [4., 7.]], dtype=float32)
        >>> mean[0], maximum[1]
        (Array([2. , 3.5], dtype=float32), Array([3., 5.], dtype=float32))

standardize_across_devices(x) -> shape (n, m)
    x has shape (n, m): m numbers on each device. Standardise all n * m numbers together,
    (x - mean) / std, with the mean and the standard deviation of the whole of x, as np.mean(x)
    and np.std(x) give them (divide by n * m; add no epsilon).

        >>> standardize_across_devices(jnp.array([[0., 2.], [4., 6.]]))                 # 2 devices
        Array([[-1.3416407, -0.4472136],
               [ 0.4472136,  1.3416407]], dtype=float32)

    Each device sees only its own row, so its jnp.mean and jnp.std describe that row alone: the
    global mean and variance need a pmean over the devices. Careful with the variance: the average
    of the devices' own variances is not the global variance, because each is measured around that
    device's own mean. Measure squared distances from the global mean.

Write both with jax.pmap, an axis_name and jax.numpy / lax only. The grader compiles them with
jax.jit and reads the program: it should communicate with all-reduces (psum, pmean, pmax), not
gather the whole array onto every device (lax.all_gather, an all-reduce of each row written
into zeros, or a ring of ppermutes: no device may put as many bytes into its collectives as the other
devices' rows of x hold together, if that is
more than 1.5 times what the reference's device puts in), nor compute on one device alone: no
device does more than 1.5 times the arithmetic one device of the reference solution does (the
report gives both counts; the same bound
holds for the share of each input a device's pmap or shard_map receives, or where none does, the
layout your jax.device_put gives it;
and no more than a quarter of that arithmetic written around the pmap, where XLA splits it by
itself: the pmap does the work). And nothing else moves: no collective of a kind the reference
solution does not run (a reduce-scatter, a ring of ppermutes), and in each kind no more than 1.5 times
the bytes its collectives move (the report lists both).

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax
import jax.numpy as jnp
from jax import lax


def all_reduce_stats(x):
    raise NotImplementedError("all_reduce_stats: (sum, mean, max) over the devices, on every device")


def standardize_across_devices(x):
    raise NotImplementedError("standardize_across_devices: (x - global mean) / global std")


if __name__ == "__main__":  # python collectives.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
