"""Reference solution for task dot (see exercises/exercise7/dot.py for the task)."""

import jax
import jax.numpy as jnp
from jax import lax


def _split(v, n):
    v = jnp.asarray(v)
    pad = (-v.shape[0]) % n
    return jnp.pad(v, (0, pad)).reshape(n, -1)


def distributed_dot(x, y):
    n = jax.device_count()
    local = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), axis_name="i"), axis_name="i")
    return local(_split(x, n), _split(y, n))[0]
