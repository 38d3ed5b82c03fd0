"""A function that sets its mesh with jax.set_mesh is traced under jax.jit as it runs when called (worker side)."""

from __future__ import annotations

from jax_script import run_json_once

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.protocol import ArraySpec
from grader.sandbox.mesh_in_trace import meshes_settable
from grader.sandbox.program_export import export_program

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


def left_set(x, w):  # round 42: a plain call, never put back
    jax.set_mesh(mesh)
    return jax.jit(jnp.matmul, out_shardings=P("data", None))(x, w)


def explicit(x, w):  # round 42: reshard on the Explicit mesh set, a product typed with its axes
    with jax.set_mesh(mesh):
        x, w = jax.reshard(x, P("data", None)), jax.reshard(w, P(None, "model"))
        return jnp.matmul(x, w, out_sharding=P("data", "model"))


specs = (ArraySpec((4, 4), "float32"), ArraySpec((4, 2), "float32"))
for name, fn in (("left set", left_set), ("explicit", explicit)):
    out[name] = len(export_program(fn, specs, name)) > 0
    out[name + ", after"] = str(jax.sharding.get_abstract_mesh().axis_names)
print(json.dumps(out))
"""



def test_set_mesh_inside_a_traced_function_works_while_the_grader_traces_it_and_jax_refuses_it_again_after():
    out = run_json_once(RUN)
    assert "can only be used outside of `jax.jit`" in out["refused by JAX"]
    assert out["sharding"] == "P('data',)" and out["values"] == [4.0] * 4
    assert out["after"] == "()"  # the context the trace set is put back
    assert "can only be used outside of `jax.jit`" in out["refused again"]


def test_a_mesh_set_by_a_plain_call_or_typed_into_explicit_arrays_is_exported_and_put_back():
    out = run_json_once(RUN)
    assert out["left set"] and out["left set, after"] == "()"  # exported, and no mesh left set in the worker
    assert out["explicit"] and out["explicit, after"] == "()"  # exported in the mesh the function set
