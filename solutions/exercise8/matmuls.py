"""Reference solution for task matmuls (see exercises/exercise8/matmuls.py for the task)."""

import jax
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _sharded(f, mesh, x_spec, w_spec, out_spec):
    def run(x, w):
        x = jax.device_put(x, NamedSharding(mesh, x_spec))
        w = jax.device_put(w, NamedSharding(mesh, w_spec))
        return jax.shard_map(f, mesh=mesh, in_specs=(x_spec, w_spec), out_specs=out_spec)(x, w)
    return run


def matmul_case1(x, w, mesh):
    return _sharded(lambda xb, wb: xb @ wb, mesh, P("data", None), P(None, "model"), P("data", "model"))(x, w)


def matmul_case2(x, w, mesh):
    def per_device(xb, wb):
        return lax.all_gather(xb, "model", axis=1, tiled=True) @ wb
    return _sharded(per_device, mesh, P("data", "model"), P(None, "model"), P("data", "model"))(x, w)


def matmul_case3(x, w, mesh):
    def per_device(xb, wb):
        return lax.psum_scatter(xb @ wb, "model", scatter_dimension=1, tiled=True)
    return _sharded(per_device, mesh, P("data", "model"), P("model", None), P("data", "model"))(x, w)


def matmul_case4(x, w, mesh):
    def per_device(xb, wb):
        return xb @ lax.all_gather(wb, "model", axis=1, tiled=True)
    return _sharded(per_device, mesh, P(("data", "model"), None), P(None, "model"), P(("data", "model"), None))(x, w)
