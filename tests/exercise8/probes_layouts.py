"""Worker-side half of the layouts suite: meshes and laid-out arrays described as plain data.

A Mesh or a sharded jax.Array cannot cross to the grader, so these probes describe them: axis names,
the device ids by mesh position, the PartitionSpec, and which block of the array each device holds.
The meshes and arrays the questions are asked about are built here with jax.make_mesh and
jax.device_put, so each question is graded on its own.
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.sandbox import student_function

AXES = ("data", "model")


def _device_ids(mesh: Mesh) -> np.ndarray:
    return np.vectorize(lambda d: d.id, otypes=[np.int64])(mesh.devices)


def _spec(spec) -> P:
    """A PartitionSpec from the plain data a test sends: None, a name, or a list of names per dimension."""
    return P(*(tuple(e) if isinstance(e, list) else e for e in spec))


def _plain_spec(spec) -> list:
    return [list(e) if isinstance(e, tuple) else e for e in spec]


def _ints(answer):
    """An answer made of integers as an int array, or a description of what it was instead."""
    try:
        return np.asarray(answer, dtype=np.int64)
    except (TypeError, ValueError):
        return {"type": type(answer).__name__, "text": repr(answer)[:80]}


def data_model_mesh(model) -> dict:
    mesh = student_function("layouts.data_model_mesh")(model)
    if not isinstance(mesh, Mesh):
        return {"type": type(mesh).__name__}
    return {"type": "Mesh", "axis_names": [str(a) for a in mesh.axis_names], "device_ids": _device_ids(mesh)}


def place(function: str, x, rows: int, cols: int) -> dict:
    """What layouts.<function>(x, mesh) returned, on a rows x cols mesh built here."""
    mesh = jax.make_mesh((rows, cols), AXES)
    out = student_function(f"layouts.{function}")(x, mesh)
    sharding = getattr(out, "sharding", None)
    described = {"type": type(out).__name__, "sharding": type(sharding).__name__}
    if isinstance(sharding, NamedSharding):
        described["spec"] = _plain_spec(sharding.spec)
    if isinstance(out, jax.Array):
        described["values"] = np.asarray(out)
        described["blocks"] = {str(s.device.id): [list(s.index[d].indices(n)[:2]) for d, n in enumerate(out.shape)]
                               for s in out.addressable_shards}
    return described


def questions(shape, spec, rows: int, cols: int) -> dict:
    """The student's shard_shape, copies and block_of (for every device, in mesh order) of an array of
    ``shape`` laid out by ``spec`` on a rows x cols mesh."""
    mesh = jax.make_mesh((rows, cols), AXES)
    x = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, _spec(spec)))
    block_of = student_function("layouts.block_of")
    return {"shard_shape": _ints(student_function("layouts.shard_shape")(x)),
            "copies": _ints(student_function("layouts.copies")(x)),
            "blocks": [_ints(block_of(x, device)) for device in mesh.devices.flat]}
