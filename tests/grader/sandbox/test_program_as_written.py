"""A program is graded as its code runs when written outside jit: ``jax.device_put`` to a layout of a
mesh moves the data (grader.sandbox.program_as_written), where jit alone may drop it.

A compiler task's function that copies x and w whole onto every device before multiplying them
would otherwise compile to the reference's own program: one all-reduce and no gather.
"""

from __future__ import annotations

from jax_script import run_json

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox import program_as_written
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

auto = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
explicit = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)


def arriving(fn, mesh):
    x_at, w_at = NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P("model", None))
    place = jax.lax.with_sharding_constraint if mesh is auto else jax.sharding.reshard
    return lambda x, w: fn(place(x, x_at), place(w, w_at))


def product(mesh):
    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", None)))


def whole_first(x, w):
    whole = NamedSharding(auto, P())
    return product(auto)(jax.device_put(x, whole), jax.device_put(w, whole))


def whole_inside_jit(x, w):
    whole = NamedSharding(auto, P())
    return jax.jit(lambda x, w: product(auto)(jax.device_put(x, whole), jax.device_put(w, whole)))(x, w)


def left_where_they_arrive(x, w):
    return product(auto)(x, w)


def whole_first_explicit(x, w):
    whole = NamedSharding(explicit, P())
    return product(explicit)(jax.device_put(x, whole), jax.device_put(w, whole))


x, w = np.arange(48, dtype=np.float32).reshape(6, 8), np.ones((8, 10), np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, w))
found = {{}}
for name, fn, mesh in [("whole_first", whole_first, auto), ("whole_inside_jit", whole_inside_jit, auto),
                       ("left_where_they_arrive", left_where_they_arrive, auto),
                       ("whole_first_explicit", whole_first_explicit, explicit)]:
    placed = arriving(fn, mesh)
    rewritten = program_as_written.function(jax.jit(placed).trace(*(jax.ShapeDtypeStruct(a.shape, a.dtype)
                                                                     for a in (x, w)))) is not None
    out = run_program(export_program(placed, specs, name), [(x, w)], name)
    found[name] = {{"rewritten": rewritten, "right": bool(np.allclose(out["values"][0], x @ w)),
                    "collectives": sorted({{c.op for c in hlo.collectives(out["hlo"])}})}}
print(json.dumps(found))
"""


def test_device_put_outside_jit_moves_the_data_inside_a_students_jit_it_does_not():
    found = run_json(RUN)
    assert all(f["right"] for f in found.values()), found
    # As written, x and w are copied whole to every device first: gathers, and no sum of partial products.
    assert found["whole_first"] == {"rewritten": True, "right": True, "collectives": ["all-gather"]}
    # Inside the student's own jit device_put does nothing when run either, and the reference's one sum stays.
    assert found["whole_inside_jit"] == {"rewritten": False, "right": True, "collectives": ["all-reduce"]}
    assert found["left_where_they_arrive"] == {"rewritten": False, "right": True, "collectives": ["all-reduce"]}
    # On Explicit axes too, as a constraint: the gathers are there, whatever jit keeps of the type.
    assert found["whole_first_explicit"] == {"rewritten": True, "right": True, "collectives": ["all-gather"]}
