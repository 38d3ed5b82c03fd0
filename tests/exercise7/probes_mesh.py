"""Worker-side half of the mesh suite: meshes and shardings described as plain data.

A Mesh or a sharded jax.Array cannot cross to the grader, so these probes describe them: axis
names, device ids by mesh position, the PartitionSpec, and which block of the array each device
holds. The meshes handed to shard_matrix and sharded_matmul are built here with jax.make_mesh,
so those tasks are graded on their own even if make_2d_mesh is wrong.
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding

from grader.sandbox import student_function


AXES = ("data", "model")


def _mesh(n_rows: int, n_cols: int) -> Mesh:
    return jax.make_mesh((n_rows, n_cols), AXES)


def _device_ids(mesh: Mesh) -> np.ndarray:
    return np.vectorize(lambda d: d.id, otypes=[np.int64])(mesh.devices)


def _spec_entry(entry):
    return list(entry) if isinstance(entry, tuple) else entry


def _block(index, shape) -> list:
    """A shard's slices as [[start, stop], ...], one pair per dimension."""
    return [[sl.start or 0, dim if sl.stop is None else sl.stop] for sl, dim in zip(index, shape)]


def make_2d_mesh(n_rows, n_cols) -> dict:
    mesh = student_function("mesh.make_2d_mesh")(n_rows, n_cols)
    if not isinstance(mesh, Mesh):
        return {"type": type(mesh).__name__}
    return {"type": "Mesh", "axis_names": [str(a) for a in mesh.axis_names], "device_ids": _device_ids(mesh)}


def shard_matrix(x, n_rows, n_cols) -> dict:
    mesh = _mesh(n_rows, n_cols)
    out = student_function("mesh.shard_matrix")(x, mesh)
    sharding = getattr(out, "sharding", None)
    description = {"type": type(out).__name__, "sharding": type(sharding).__name__, "values": np.asarray(out),
                   "device_ids": _device_ids(mesh)}
    if isinstance(sharding, NamedSharding):
        description["spec"] = [_spec_entry(e) for e in sharding.spec]
    if isinstance(out, jax.Array):
        description["blocks"] = {str(s.device.id): _block(s.index, out.shape) for s in out.addressable_shards}
    return description


def sharded_matmul(n_rows, n_cols):
    """sharded_matmul on a mesh built here, for student.program."""
    mesh = _mesh(n_rows, n_cols)
    fn = student_function("mesh.sharded_matmul")
    return lambda x, w: fn(x, w, mesh)
