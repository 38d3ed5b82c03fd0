"""Device meshes as plain data: the shapes a device count allows, which mesh axis a collective ran
over, and which block of an array a PartitionSpec gives each device.

A suite hands a student's code a mesh built in a probe (``jax.make_mesh(sizes, names)``) and reads
the compiled program in the grader's process, which has no JAX. These functions answer the questions
such a suite asks about it, from the mesh's axis names and sizes alone: the device at mesh position
(i, j, ...) is device ``i * sizes[1] * ... + j ...`` (``jax.make_mesh`` on emulated CPU devices, and
the clean worker of program mode, lay devices out in order). A PartitionSpec is written as the
list a probe returns: one entry per array dimension, each None, an axis name, or a list of names.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from grader.suite import hlo
from grader.suite.hlo import Collective


def shapes(devices: int) -> list[tuple[int, int]]:
    """Every (rows, columns) mesh of exactly ``devices`` devices, fewest rows first."""
    return [(r, devices // r) for r in range(1, devices + 1) if devices % r == 0]


def square(devices: int) -> tuple[int, int]:
    """The mesh of ``devices`` closest to square with no more rows than columns: 1 x 1, 1 x 2, 2 x 2,
    2 x 4. From 4 devices on both of its axes have more than one device, so a collective over the
    wrong one shows."""
    return max((s for s in shapes(devices) if s[0] <= s[1]), key=lambda s: s[0])


def long_rings(devices: int) -> tuple[int, int]:
    """The mesh for a structural test of a ring along its second axis: every device in one ring (1 x 4, 1 x 8), since
    on a ring of 2 every schedule sends the same one block (direct sends, recursive doubling, either direction: each
    is the ring there), and the value tests' meshes give rings of 1, 2 and 4 only, so a ring length written into the
    code (3 steps) shows on 8 (round 53); :func:`square` below 3 devices."""
    return (1, devices) if devices >= 3 else square(devices)


def other(devices: int) -> tuple[int, int]:
    """A second mesh shape for ``devices``, unlike :func:`square`: its transpose where that differs (2 x 1,
    4 x 2), else every device along the second axis (1 x 4); 1 x 1 for one device."""
    rows, cols = square(devices)
    return (cols, rows) if rows != cols else (1, devices)


def every(devices: int, *layouts) -> list[tuple[int, int]]:
    """Each mesh shape the functions ``layouts`` (:func:`square`, :func:`other`, :func:`long_rings`: the
    meshes a task's tests compile) give ``devices``, once, in that order. A structural test reads the
    program on all of them: a program knows its mesh's shape while it is traced, so one read on a single
    shape could run the asked-for algorithm there only, and a plain one on the shapes only the value
    tests compile (round 53)."""
    return list(dict.fromkeys(layout(devices) for layout in layouts))


def device_ids(sizes) -> np.ndarray:
    """The id of the device at each mesh position."""
    return np.arange(math.prod(sizes)).reshape(tuple(sizes))


def groups_along(names, sizes, axes) -> set[tuple[int, ...]]:
    """The groups of devices a collective over mesh axes ``axes`` runs among: devices that differ
    only in their position along those axes, ordered along them as the axes are listed."""
    ids = device_ids(sizes)
    along = [list(names).index(a) for a in axes]
    rest = [i for i in range(len(sizes)) if i not in along]
    per_group = math.prod(sizes[i] for i in along)
    return {tuple(int(d) for d in row) for row in ids.transpose(rest + along).reshape(-1, per_group)}


def moves(c: Collective) -> bool:
    """True if the collective moves data between devices: a group of more than one device, or a
    permute pair whose source and target differ (a collective among one device copies nothing)."""
    if c.groups is None:
        return True  # not known: count it
    if c.op == "collective-permute":
        return any(len(set(pair)) > 1 for pair in c.groups)
    return any(len(g) > 1 for g in c.groups)


def per_run(c: Collective | list[Collective]) -> float:
    """The bytes one device puts into ``c`` over one run of the program: each execution's, times how often it
    runs (a loop of small all-reduces moves as much as one large one); infinite in a loop of unknown length,
    which no bound admits. ``c`` may be several collectives, whose bytes add up (an array all-reduced one element
    at a time moves as much as in one all-reduce)."""
    return sum(math.inf if one.times is None else one.bytes * one.times
               for one in (c if isinstance(c, list) else [c]))


def per_run_text(c: Collective | list[Collective]) -> str:
    """:func:`per_run` in words: "96 bytes", "96 bytes (4 bytes, 24 times)", "96 bytes (in 24 all-reduces)", or
    an unknown number."""
    several = c if isinstance(c, list) else [c]
    if len(several) > 1:
        total = per_run(several)
        kinds = " and ".join(dict.fromkeys(one.op for one in several)) + "s"
        if total == math.inf:
            return f"an unknown number of bytes in {len(several)} {kinds} (some in a loop whose length is unknown),"
        return f"{int(total)} bytes (in {sum(one.times for one in several)} {kinds})"
    c = several[0]
    if c.times is None:
        return f"{c.bytes} bytes each time, in a loop whose length is unknown when it compiles,"
    return f"{c.bytes * c.times} bytes" + (f" ({c.bytes} bytes, {c.times} times)" if c.times > 1 else "")


def axes_of(c: Collective, names, sizes) -> tuple[str, ...] | None:
    """The mesh axes the collective ran over, in mesh order (e.g. ``("model",)``), or None if its
    groups are not those of any set of axes (or are unknown). A permute runs over the axes along which
    its sources and targets differ, with every other coordinate the same."""
    if c.groups is None:
        return None
    names = tuple(names)
    if c.op == "collective-permute":
        position = {int(d): np.unravel_index(d, tuple(sizes)) for d in device_ids(sizes).ravel()}
        differ = {i for s, t in c.groups for i in range(len(names)) if position[s][i] != position[t][i]}
        return tuple(names[i] for i in sorted(differ))
    found = {tuple(sorted(g)) for g in c.groups}
    for k in range(len(names) + 1):
        for axes in itertools.combinations(names, k):
            if found == {tuple(sorted(g)) for g in groups_along(names, sizes, axes)}:
                return axes
    return None


def _axes(entry) -> tuple[str, ...]:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def spec_text(spec) -> str:
    """A PartitionSpec as a student writes it: ``P('data', None)``, ``P(('data', 'model'))``."""
    def one(entry):
        axes = _axes(entry)
        return "None" if not axes else repr(axes[0]) if isinstance(entry, str) else repr(axes)
    return f"P({', '.join(one(e) for e in spec)})"


def block_of(shape, spec, names, sizes, position) -> tuple[tuple[int, int], ...]:
    """The slice ``((start, stop), ...)`` of an array of ``shape`` laid out by ``spec`` that the device at
    mesh ``position`` holds. A dimension split over several axes is split over the first one first."""
    names = tuple(names)
    block = []
    for d, dim in enumerate(shape):
        axes = _axes(spec[d]) if d < len(spec) else ()
        parts, index = 1, 0
        for a in axes:
            i = names.index(a)
            index, parts = index * sizes[i] + position[i], parts * sizes[i]
        step = dim // parts
        block.append((index * step, (index + 1) * step))
    return tuple(block)


def block_shape(shape, spec, names, sizes) -> tuple[int, ...]:
    """The shape of the block each device holds of an array of ``shape`` laid out by ``spec``."""
    return tuple(stop - start for start, stop in block_of(shape, spec, names, sizes, (0,) * len(sizes)))


def copies(spec, names, sizes) -> int:
    """How many devices hold each element of an array laid out by ``spec``: the product of the sizes of
    the mesh axes it does not split over."""
    used = {a for entry in spec for a in _axes(entry)}
    return math.prod(size for name, size in zip(names, sizes) if name not in used)


def over_text(axes) -> str:
    """Mesh axes as a phrase: "over 'model'", "over 'data' and 'model'", "among some devices"."""
    if axes is None:
        return "among a group of devices that is no mesh axis"
    if not axes:
        return "within each device"
    return "over " + " and ".join(repr(a) for a in axes)


# What an operation XLA added a collective for is, in the code's words, where its primitive's name is not.
_ADDED_FOR = {"sharding_constraint": "a layout the code sets with device_put or with_sharding_constraint",
              "dot_general": "a product (dot_general), to give its operands and result the layouts they are given"}


def added_by_xla(origin: str) -> str:
    """"added by XLA for ...": what XLA's partitioner added a collective for, in the code's words."""
    return f"added by XLA for {_ADDED_FOR.get(origin, origin)}" if origin else "added by XLA"


def phrase(c: Collective, names, sizes, why: bool = False) -> str:
    """One collective as a student reads it: "an all-gather over 'model'"; with ``why``, for one the code did not
    ask for itself, what XLA added it for (round 39: a gather for a device_put was told as if written)."""
    article = "an" if c.op[0] in "aeiou" else "a"
    times = f" ({c.times} times)" if c.times and c.times > 1 else ""
    added = f" ({added_by_xla(c.origin)})" if why and not c.by_student else ""
    return f"{article} {c.op} {over_text(axes_of(c, names, sizes))}{times}{added}"


def moving(text: str, names, sizes, ops=None) -> list[Collective]:
    """The collectives of the compiled program ``text`` (of the kinds ``ops``, default all) that move data
    between devices on a mesh of ``sizes``."""
    return [c for c in hlo.select(text, ops or hlo.COLLECTIVES) if moves(c)]


def counts(names, sizes) -> dict[str, int]:
    """The counts of a mesh a wrong value's factor may equal (grader.suite.differences): devices along each axis."""
    return {f"devices along '{name}'": size for name, size in zip(names, sizes)}
