"""The collectives a function's trace asks for, with shard_map's replication check off (worker side)."""

from __future__ import annotations

from jax_script import run_json

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.protocol import ArraySpec
from grader.sandbox import traced_collectives

mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
SPEC = (ArraySpec((4, 6), "float32"),)


def on_mesh(per_device, out_specs=P("data", None)):
    return jax.shard_map(per_device, mesh=mesh, in_specs=P("data", "model"), out_specs=out_specs)


FUNCTIONS = {{
    # out_specs says the same along 'model', but the psum runs over 'data': JAX refuses it as written (here
    # built before the trace, as a decorator or a module-level name would)
    "psum over the other axis": on_mesh(lambda b: lax.psum(b, "data")),
    "pmean": on_mesh(lambda b: lax.pmean(b, "model")),
    "a count divided by": on_mesh(lambda b: b / lax.psum(jnp.ones(()), "model") + lax.psum(b, "model")),
    # round 35: a sum used as it is and divided by a hard-coded count is a psum, not a pmean written out
    "a sum also used whole": on_mesh(lambda b: (lambda t: t + t / 4)(lax.psum(b, "model"))),
    "a gather in a loop's body": on_mesh(lambda b: lax.fori_loop(
        0, 2, lambda i, c: c + lax.all_gather(b, "model", axis=1, tiled=True)[:, :3], b), P("data", "model")),
    "grad of a gather": on_mesh(lambda b: jax.grad(lambda v: lax.all_gather(v, "data", tiled=True).sum())(b),
                                P("data", "model")),
    # gathered along axis 1 where the product needs axis 0: the trace fails at the product, after the gather
    "a gather along the wrong axis": on_mesh(lambda b: lax.all_gather(b, "data", axis=1, tiled=True) @ jnp.ones((4, 2)),
                                             P("data", "model")),
}}
out = {{name: traced_collectives.collectives(fn, SPEC) for name, fn in FUNCTIONS.items()}}
# a ring in a loop: the block passed on is x's alone, though the carry beside it multiplies it by w
ring = jax.shard_map(lambda x, w: lax.fori_loop(0, 2, lambda i, c: (c[0] + c[1] @ w, lax.ppermute(
    c[1], "model", [(0, 1), (1, 0)])), (jnp.zeros((2, 2)), x))[0], mesh=mesh,
    in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))
out["a ring in a loop's carry"] = traced_collectives.collectives(ring, SPEC + (ArraySpec((6, 2), "float32"),))
for found in out.values():
    found.pop("maps")  # read in the test of maps below
try:
    jax.make_jaxpr(on_mesh(lambda b: lax.psum(b, "data")))(jnp.zeros((4, 6)))
    out["checked again after"] = False
except Exception:
    out["checked again after"] = True
print(json.dumps(out))
"""


def test_a_refused_shard_map_is_read_with_its_collectives_axes_and_shapes_and_the_check_comes_back():
    out = run_json(RUN)
    whole = lambda *found: {"collectives": [list(f) for f in found], "complete": True}  # noqa: E731
    b = [[0, [4, 6]]]  # made of the per-device computation's one input, of global shape (4, 6)
    assert out["psum over the other axis"] == whole(["psum", ["data"], None, [2, 3], b, False])  # one device's block
    assert out["pmean"] == whole(["pmean", ["model"], None, [2, 3], b, False])  # a psum whose result is divided
    assert out["a count divided by"] == whole(["psum", ["model"], None, [], [], False],
                                              ["psum", ["model"], None, [2, 3], b, False])
    assert out["a sum also used whole"] == whole(["psum", ["model"], None, [2, 3], b, False])
    # nested jaxprs are read, their collectives made of what their equation is given, a loop's marked as such
    assert out["a gather in a loop's body"] == whole(["all_gather", ["model"], 1, [2, 6], b, True])
    # the gradient of a sum is ones, made of no input
    assert out["grad of a gather"] == whole(["all_gather", ["data"], 0, [4, 3], b, False],
                                            ["psum_scatter", ["data"], 0, [2, 3], [], False])
    assert out["a gather along the wrong axis"] == {"collectives": [["all_gather", ["data"], 1, [2, 6]]],
                                                    "complete": False}  # what was asked before the trace failed
    # a loop's carry by place: the ppermute runs on what x's block became, never on w, whatever runs beside it
    assert out["a ring in a loop's carry"] == whole(["ppermute", ["model"], None, [2, 3], b, True])
    assert out["checked again after"]  # JAX's own check is back once the trace is read


MAPS = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.protocol import ArraySpec
from grader.sandbox import traced_collectives

mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
explicit = jax.make_mesh((2, 2), ("data", "model"))
pmapped = jax.pmap(lambda a, b: a @ b, in_axes=(0, None), axis_name="i")
mapped = jax.jit(jax.shard_map(lambda a, b: jax.lax.psum(a @ b, "model"), mesh=mesh, in_specs=(P("data", "model"), P("model", None)),
                               out_specs=P("data", None)))
pmapped(jnp.ones((4, 3, 5)), jnp.ones((5, 2)))  # traced and cached before: JAX checks nothing again
mapped(jnp.ones((4, 4)), jnp.ones((4, 3)))
out = {{
    "pmap": traced_collectives.collectives(pmapped, (ArraySpec((4, 3, 5), "float32"), ArraySpec((5, 2), "float32"))),
    "shard_map": traced_collectives.collectives(mapped, (ArraySpec((4, 4), "float32"), ArraySpec((4, 3), "float32"))),
    # refused while its output sharding is checked: read as it was asked for
    "jit refused": traced_collectives.collectives(
        lambda x, w: jax.jit(jnp.matmul, out_shardings=NamedSharding(explicit, P(("data", "model"), None)))(x, w),
        (ArraySpec((6, 4), "float32"), ArraySpec((4, 6), "float32"))),
    # refused as its in_specs are checked against where the inputs are
    "in_specs refused": traced_collectives.collectives(
        lambda x: jax.shard_map(lambda b: b, mesh=explicit, in_specs=P(), out_specs=P())(
            jax.device_put(x, NamedSharding(explicit, P("data", None)))), (ArraySpec((4, 3), "float32"),)),
}}
print(json.dumps(out))
"""


def test_each_per_device_computation_and_sharded_jit_is_read_with_its_specs_cached_or_refused():
    out = run_json(MAPS)
    assert out["pmap"]["maps"] == [{"kind": "pmap", "mesh": ["i"], "in": [[[["i"]], [4, 3, 5]], [[], [5, 2]]],
                                    "out": [[["i"]]]}]
    assert out["shard_map"]["maps"] == [{"kind": "shard_map", "mesh": ["data", "model"],
                                         "in": [[[["data"], ["model"]], [4, 4]], [[["model"], None], [4, 3]]],
                                         "out": [[["data"], None]]}]
    assert out["jit refused"] == {"collectives": [], "complete": False, "maps": [
        {"kind": "jit", "mesh": ["data", "model"], "in": [], "out": [[["data", "model"], None]]}]}
    assert out["in_specs refused"]["complete"] is False
    assert out["in_specs refused"]["maps"] == [{"kind": "shard_map", "mesh": ["data", "model"], "in": [[[], [4, 3]]],
                                                "out": [[]]}]
