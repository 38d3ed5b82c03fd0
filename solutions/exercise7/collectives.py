"""Reference solution for task collectives (see exercises/exercise7/collectives.py for the task)."""

import jax
import jax.numpy as jnp
from jax import lax

AXIS = "devices"


def _stats(row):
    return lax.psum(row, AXIS), lax.pmean(row, AXIS), lax.pmax(row, AXIS)


def _standardize(row):
    mean = lax.pmean(jnp.mean(row), AXIS)
    variance = lax.pmean(jnp.mean((row - mean) ** 2), AXIS)
    return (row - mean) / jnp.sqrt(variance)


_all_reduce_stats = jax.pmap(_stats, axis_name=AXIS)
_standardize_across_devices = jax.pmap(_standardize, axis_name=AXIS)


def all_reduce_stats(x):
    return _all_reduce_stats(x)


def standardize_across_devices(x):
    return _standardize_across_devices(x)
