"""Which devices a collective of compiled HLO runs among, in each of the forms XLA prints.

A collective's groups say which devices reduce, gather or exchange together: on a ('data', 'model')
mesh a psum over 'model' has one group per mesh row. XLA prints them three ways, all seen in the
programs this course compiles on CPU:

* a list: ``replica_groups={{0,1},{2,3}}`` (what shard_map's collectives print), and for a permute
  its (source, target) pairs, ``source_target_pairs={{0,1},{1,0}}``;
* an iota: ``replica_groups=[2,2]<=[4]`` or ``[4,2]<=[2,4]T(1,0)``: the device ids 0..n-1 laid out
  in the shape after ``<=``, transposed by ``T(...)``, read as as many groups as the first number,
  each of the second number of devices;
* mesh axes: ``replica_groups=mesh['axis_0'=2,'axis_1'=2], device_ids=([2,2]T(1,0)) {'axis_1'}``
  (what XLA's partitioner prints for the collectives it adds): the devices of a mesh of XLA's own
  (its axes are not JAX's), grouped along the axes in braces. ``device_ids`` is left out when the
  devices are in order, and is an iota or a list of ids otherwise.

A form not recognised (a sub-axis such as ``'axis_1':(1)2``, say) gives None, never a guess.
"""

from __future__ import annotations

import math
import re

import numpy as np

Groups = tuple[tuple[int, ...], ...]

_LIST = re.compile(r"\b(?:replica_groups|source_target_pairs)=\{((?:\{[\d,\s]*\},?\s*)*)\}")
_IOTA = re.compile(r"\breplica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")
_MESH = re.compile(r"\breplica_groups=mesh\[([^\]]*)\](?:, device_ids=\(([^)]*\)?)\))? \{([^}]*)\}")
_AXIS = re.compile(r"'?([\w.$-]+)'?=(\d+)")


def _ints(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d.strip()]


def _iota(dims: list[int], perm: list[int] | None) -> np.ndarray:
    ids = np.arange(math.prod(dims)).reshape(dims)
    return ids.transpose(perm) if perm else ids


def _device_ids(text: str | None, sizes: list[int]) -> np.ndarray | None:
    """The mesh's device ids in mesh order: in order when not printed, else an iota or a list."""
    if text is None:
        return np.arange(math.prod(sizes)).reshape(sizes)
    iota = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    if iota:
        ids = _iota(_ints(iota[1]), _ints(iota[2]) if iota[2] else None)
    elif re.fullmatch(r"[\d,\s]+", text):
        ids = np.array(_ints(text))
    else:
        return None
    return ids.reshape(sizes) if ids.size == math.prod(sizes) else None


def _mesh_groups(axes_text: str, ids_text: str | None, grouped_text: str) -> Groups | None:
    axes = _AXIS.findall(axes_text)
    names, sizes = [name for name, _ in axes], [int(size) for _, size in axes]
    grouped = [g.strip().strip("'") for g in grouped_text.split(",") if g.strip()]
    if not axes or any(g not in names for g in grouped):
        return None  # a sub-axis, or a form this reader does not know
    ids = _device_ids(ids_text, sizes)
    if ids is None:
        return None
    along = [names.index(g) for g in grouped]
    order = [i for i in range(len(names)) if i not in along] + along
    per_group = math.prod(sizes[i] for i in along)
    return tuple(tuple(int(d) for d in row) for row in ids.transpose(order).reshape(-1, per_group))


def parse(rest: str) -> Groups | None:
    """The groups (or a permute's source-target pairs) of the instruction whose text after its opening
    parenthesis is ``rest``, or None if it prints none this reader knows."""
    listed = _LIST.search(rest)
    if listed:
        return tuple(tuple(_ints(g)) for g in re.findall(r"\{([\d,\s]*)\}", listed[1]))
    iota = _IOTA.search(rest)
    if iota:
        count, size = int(iota[1]), int(iota[2])
        ids = _iota(_ints(iota[3]), _ints(iota[4]) if iota[4] else None)
        return tuple(tuple(int(d) for d in row) for row in ids.reshape(count, size)) if ids.size == count * size \
            else None
    mesh = _MESH.search(rest)
    if mesh:
        return _mesh_groups(mesh[1], mesh[2], mesh[3])
    return None
