"""A function that sets its mesh with jax.set_mesh is traced under jax.jit as it runs when called (worker side)."""

from __future__ import annotations

from jax_script import run_json

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox.mesh_in_trace import meshes_settable

mesh = jax.make_mesh((2, 2), ("data", "model"))


def product(x, w):
    with jax.set_mesh(mesh):
        return jax.jit(jnp.matmul, out_shardings=P("data", None))(x, w)


x, w = np.ones((4, 4), np.float32), np.ones((4, 2), np.float32)
out = {{}}
def refused():
    try:
        jax.jit(product).trace(x, w)
    except ValueError as exc:
        return str(exc)
out["refused by JAX"] = refused()
with meshes_settable():
    traced = jax.jit(product).trace(x, w)
    with jax.set_mesh(None):  # JAX's own None, too
        pass
result = traced.lower().compile()(x, w)
out["sharding"], out["values"] = str(result.sharding.spec), np.asarray(result)[:, 0].tolist()
out["after"] = str(jax.sharding.get_abstract_mesh().axis_names)
out["refused again"] = refused()
print(json.dumps(out))
"""


def test_set_mesh_inside_a_traced_function_works_while_the_grader_traces_it_and_jax_refuses_it_again_after():
    out = run_json(RUN)
    assert "can only be used outside of `jax.jit`" in out["refused by JAX"]
    assert out["sharding"] == "P('data',)" and out["values"] == [4.0] * 4
    assert out["after"] == "()"  # the context the trace set is put back
    assert "can only be used outside of `jax.jit`" in out["refused again"]
