"""How the per-device computations a student's function asks for split its inputs and join its results,
against the reference's: a wrong in_specs, out_specs, in_axes or out_axes, said as the argument itself.

A spec argument that is wrong rarely shows as itself: JAX answers with a type, a shape or a value that is
off, and the student reads a symptom. Traced again (grader.sandbox.traced_collectives), both functions
say each jax.shard_map, jax.pmap and jax.jit given shardings they ask for, in order: its mesh axes, the
spec of each input with the input's shape, the spec of each result. Where the student's asks for the
reference's number of computations, of the same kinds, over the same mesh axes with inputs of the same
shapes, the first input or result laid out otherwise is the difference this module says, in the
argument's own terms (in_specs, in_axes or out_shardings, as the student wrote it) and in words of the
layout it gives ("rows split over 'data'", "whole on every device"). It claims no cause: the sentence
states how the two programs differ, which the student can check against the task's layout. The student's
maps come from the student's process: each is checked for form (mesh axes are identifiers, shapes small
whole numbers) before a word of it is used; grader.suite.traced checks its collectives with the same
:data:`AXIS` and :func:`read_shape`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.suite.meshes import over_text

_MOST = 16  # per-device computations read from one trace at most
_ARGS = 64  # inputs or results of one read at most
AXIS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")  # a mesh axis name as a student's trace may report one

Spec = tuple  # a PartitionSpec's entries, each a tuple of mesh axes (empty: that array axis is not split)


KINDS = ("shard_map", "pmap", "jit")
# The arguments that lay out a kind's inputs and results, as the student writes them.
_ARGUMENTS = {"shard_map": ("shard_map", "in_specs", "out_specs"), "pmap": ("jax.pmap", "in_axes", "out_axes"),
              "jit": ("jax.jit", "in_shardings", "out_shardings")}


@dataclass(frozen=True)
class Mapped:
    """One jax.shard_map, jax.pmap or jax.jit given shardings, of a trace."""

    kind: str
    mesh: tuple[str, ...]
    ins: tuple[tuple[Spec | None, tuple[int, ...]], ...]
    outs: tuple[Spec | None, ...]


def _spec(raw) -> Spec | None:
    """A spec as read from a trace, trailing unsplit entries dropped (P('data') and P('data', None) are one
    layout); None for an input passed unsplit as a static value; raises ValueError if not of that form."""
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or len(raw) > 8:
        raise ValueError(raw)
    entries = []
    for entry in raw:
        names = () if entry is None else entry
        if not isinstance(names, (list, tuple)) or len(names) > 4 or \
                not all(isinstance(a, str) and AXIS.fullmatch(a) for a in names):
            raise ValueError(entry)
        entries.append(tuple(names))
    while entries and not entries[-1]:
        entries.pop()
    return tuple(entries)


def read_shape(raw) -> tuple[int, ...] | None:
    """An array shape as a trace reports it (at most 8 whole numbers below 2**40), else None."""
    if not isinstance(raw, (list, tuple)) or len(raw) > 8 or \
            not all(isinstance(d, int) and 0 <= d < 2 ** 40 for d in raw):
        return None
    return tuple(raw)


def _mapped(raw) -> Mapped:
    if not isinstance(raw, dict) or raw.get("kind") not in KINDS:
        raise ValueError(raw)
    mesh, ins, outs = raw.get("mesh"), raw.get("in"), raw.get("out")
    if not (isinstance(mesh, list) and len(mesh) <= 4 and all(isinstance(a, str) and AXIS.fullmatch(a) for a in mesh)
            and isinstance(ins, list) and len(ins) <= _ARGS and isinstance(outs, list) and len(outs) <= _ARGS):
        raise ValueError(raw)
    read_ins = []
    for item in ins:
        if not (isinstance(item, list) and len(item) == 2):
            raise ValueError(item)
        shape = read_shape(item[1])
        if shape is None:
            raise ValueError(item)
        read_ins.append((_spec(item[0]), shape))
    return Mapped(raw["kind"], tuple(mesh), tuple(read_ins), tuple(_spec(o) for o in outs))


def read(trace) -> list[Mapped] | None:
    """The per-device computations of a trace ({"maps": [...], ...}), in order; None where they are not of that
    form (or the trace holds none)."""
    found = trace.get("maps") if isinstance(trace, dict) else None
    if not isinstance(found, list) or not found or len(found) > _MOST:
        return None
    try:
        return [_mapped(m) for m in found]
    except ValueError:
        return None


def _axis_word(ndim: int, axis: int) -> str:
    return {0: "rows", 1: "columns"}.get(axis, f"axis {axis}") if ndim == 2 else f"axis {axis}"


def _written(spec: Spec) -> str:
    """The spec as the student writes it: P('data', None), P(('data', 'model'),), P()."""
    entries = [repr(e[0]) if len(e) == 1 else "None" if not e else f"({', '.join(map(repr, e))})" for e in spec]
    return f"P({', '.join(entries)}{',' if len(spec) == 1 and len(spec[0]) > 1 else ''})"


def _axes_written(spec: Spec, pmap_axis: str) -> str:
    """A pmap in_axes or out_axes entry: the array axis the device axis is on, or None."""
    at = [d for d, e in enumerate(spec) if pmap_axis in e]
    return str(at[0]) if at else "None"


def _splits(spec: Spec, ndim: int, pmap: bool) -> list[str]:
    return [f"{_axis_word(ndim, d)} split {'over the devices' if pmap else over_text(e)}" for d, e in enumerate(spec)
            if e]


def _input_layout(spec: Spec, ndim: int, pmap: bool) -> str:
    return "; ".join(_splits(spec, ndim, pmap)) or "whole on every device"


def _result_layout(spec: Spec | None, kind: str) -> str:
    if spec is None:
        return "laid out as the compiler chooses"
    if kind == "jit":
        return _input_layout(spec, len(spec), False)
    pmap = kind == "pmap"
    joined = [f"the devices' blocks joined along axis {d}{'' if pmap else ' ' + over_text(e)}"
              for d, e in enumerate(spec) if e]
    return "; ".join(joined) or "one device's result taken as the whole, as if every device held the same"


def _how(m: Mapped, spec: Spec | None, layout: str) -> str:
    if spec is None:
        return f"not given ({layout})"
    if m.kind == "pmap":
        return f"{_axes_written(spec, m.mesh[0]) if m.mesh else 'None'} ({layout})"
    return f"{_written(spec)} ({layout})"


def _told(mine: Mapped, theirs: Mapped) -> str | None:
    what, arg_in, arg_out = _ARGUMENTS[mine.kind]
    pmap, their_pmap = mine.kind == "pmap", theirs.kind == "pmap"
    for k, ((spec, shape), (their_spec, _)) in enumerate(zip(mine.ins, theirs.ins)):
        if spec is not None and their_spec is not None and spec != their_spec:
            return (f"your {what}'s {arg_in} entry for its input {k}, of shape {shape}, is "
                    f"{_how(mine, spec, _input_layout(spec, len(shape), pmap))}; the reference's is "
                    f"{_how(theirs, their_spec, _input_layout(their_spec, len(shape), their_pmap))}")
    if len(mine.outs) == len(theirs.outs):
        for k, (spec, their_spec) in enumerate(zip(mine.outs, theirs.outs)):
            # a jit's result given no sharding (None) is not told from one given P() (): XLA may well replicate it
            if spec != their_spec and {spec, their_spec} != {None, ()}:
                return (f"your {what}'s {arg_out} entry for its result {k} is "
                        f"{_how(mine, spec, _result_layout(spec, mine.kind))}; the reference's is "
                        f"{_how(theirs, their_spec, _result_layout(their_spec, theirs.kind))}")
    return None


def _renamed(m: Mapped, names: tuple[str, ...]) -> Mapped:
    """``m`` with its mesh axes called ``names`` (a pmap's one axis is named by whoever writes it)."""
    to = dict(zip(m.mesh, names))
    rename = lambda spec: None if spec is None else tuple(tuple(to[a] for a in e) for e in spec)  # noqa: E731
    return Mapped(m.kind, names, tuple((rename(s), shape) for s, shape in m.ins), tuple(map(rename, m.outs)))


def pmap_names(mine, theirs) -> dict[str, str]:
    """{student's axis name: the reference's} where both traces build only jax.pmaps, as many, one axis each,
    named otherwise (the name is the writer's choice); {} elsewhere."""
    mine, theirs = read(mine), read(theirs)
    if mine is None or theirs is None or len(mine) != len(theirs) or \
            not all(m.kind == t.kind == "pmap" and len(m.mesh) == len(t.mesh) == 1 for m, t in zip(mine, theirs)):
        return {}
    names = {m.mesh[0]: t.mesh[0] for m, t in zip(mine, theirs)}
    return names if len(set(names.values())) == len(names) and any(a != b for a, b in names.items()) else {}


def _comparable(m: Mapped, t: Mapped) -> bool:
    """Whether two computations are one asked for alike: per-device ones (shard_map and pmap count as one kind)
    or jits, over the same mesh axes, on as many inputs where both say their inputs."""
    per_device = {"shard_map", "pmap"}
    same_kind = m.kind == t.kind or {m.kind, t.kind} <= per_device
    return same_kind and m.mesh == t.mesh and (not m.ins or not t.ins or len(m.ins) == len(t.ins))


def _handed_whole(mine: Mapped, theirs: Mapped) -> str | None:
    """Where the student's computation is handed more inputs than the reference's, an extra one it gets whole on
    every device that the reference's gets split (the same array given twice, once whole, once split)."""
    if not mine.ins or not theirs.ins or len(mine.ins) <= len(theirs.ins):
        return None
    what, arg_in, _ = _ARGUMENTS[mine.kind]
    for k, (spec, shape) in enumerate(mine.ins):
        split = next((s for s, their_shape in theirs.ins if their_shape == shape and s), None)
        if spec == () and split:
            return (f"your {what} is handed {len(mine.ins)} inputs, the reference's {len(theirs.ins)}: your input {k}, "
                    f"of shape {shape}, is whole on every device ({arg_in} entry P()), where the reference's "
                    f"computation gets an input of that shape split ({_written(split)})")
    return None


def _reshaped(mine: Mapped, theirs: Mapped) -> str | None:
    """The first input the two computations are handed in different shapes (a reshape or pad before it)."""
    for k, ((_, shape), (_, their_shape)) in enumerate(zip(mine.ins, theirs.ins)):
        if shape != their_shape:
            swapped = " (the same axes in the other order)" if shape == their_shape[::-1] else ""
            return (f"your {_ARGUMENTS[mine.kind][0]} is handed its input {k} in shape {shape}; the reference's in "
                    f"shape {their_shape}{swapped}")
    return None


def difference(mine, theirs) -> str | None:
    """The first difference between the computations of the student's trace and the reference's, in words: an
    extra input handed whole where the reference's splits one of its shape, an input handed over in another
    shape, an input or result laid out otherwise; None where the two ask for different numbers of computations
    (a trace that failed: more than the reference's), of other kinds or over other mesh axes (no pair to
    compare), where they lay everything out alike, or where either trace is not of its form."""
    complete = isinstance(mine, dict) and mine.get("complete") is True
    mine, theirs = read(mine), read(theirs)
    if mine is None or theirs is None or len(mine) > len(theirs) or (complete and len(mine) != len(theirs)):
        return None
    for m, t in zip(mine, theirs):
        if m.kind == t.kind == "pmap" and len(m.mesh) == len(t.mesh) == 1:
            t = _renamed(t, m.mesh)
        if not _comparable(m, t):
            return _handed_whole(m, t) if m.mesh == t.mesh else None
        told = _reshaped(m, t) or _told(m, t)
        if told:
            return told
    return None
