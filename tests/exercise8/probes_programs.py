"""Worker-side half of the suites that grade programs: the student's function on a mesh built here.

A Mesh cannot cross to the grader, so a test names the mesh's shape and these probes build it with
jax.make_mesh and return the function ``student.program`` exports: the student's function with the
mesh (and a fixed learning rate) filled in, a per-device ring function inside shard_map, or a matmul
whose inputs arrive laid out as the compiler task says.
"""

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.sandbox import student_function

AXES = ("data", "model")
RING = P(("data", "model"))  # one block per device, in mesh order


def _spec(spec) -> P:
    return P(*(tuple(e) if isinstance(e, list) else e for e in spec))


def on_mesh(function: str, shape, axes=AXES, lr=None):
    """``function(*arrays, [lr,] mesh)`` on a mesh of ``shape`` with ``axes`` built by jax.make_mesh."""
    mesh = jax.make_mesh(tuple(shape), tuple(axes))
    fn = student_function(function)
    fixed = () if lr is None else (lr,)
    return lambda *arrays: fn(*arrays, *fixed, mesh)


def ring(function: str, rows: int, cols: int):
    """The per-device ``function(block, "model")`` inside shard_map: each mesh row is one ring, and every
    device's result comes back, in mesh order."""
    mesh = jax.make_mesh((rows, cols), AXES)
    fn = student_function(function)
    per_device = jax.shard_map(lambda x: fn(x, "model"), mesh=mesh, in_specs=RING, out_specs=RING)
    return lambda x: per_device(jax.device_put(x, NamedSharding(mesh, RING)))


def placed(function: str, rows: int, cols: int, x_spec, w_spec):
    """``function(x, w, mesh)`` on an Auto mesh, with x and w arriving laid out as ``x_spec`` and ``w_spec``."""
    mesh = jax.make_mesh((rows, cols), AXES, axis_types=(AxisType.Auto,) * 2)
    fn = student_function(function)
    x_at, w_at = NamedSharding(mesh, _spec(x_spec)), NamedSharding(mesh, _spec(w_spec))
    return lambda x, w: fn(jax.lax.with_sharding_constraint(x, x_at), jax.lax.with_sharding_constraint(w, w_at), mesh)


_BUILT: dict = {}  # (probe, fixed) -> the function it built, so that runs on other inputs reuse one compiled program


def values(probe: str, *arrays, **fixed):
    """What the function probe ``probe`` builds returns for ``arrays``, run here in the student's worker:
    for telling the mistake behind a value the clean worker's run already found wrong (the engine runs it
    again with one block of an input at a time, grader.suite.differences: the function is built once)."""
    key = (probe, repr(sorted(fixed.items())))
    if key not in _BUILT:
        _BUILT[key] = jax.jit({"on_mesh": on_mesh, "ring": ring, "placed": placed}[probe](**fixed))
    return jax.tree.map(np.asarray, _BUILT[key](*arrays))
