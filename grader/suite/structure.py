"""What a program communicates, against what the reference's program does: the first difference, measured.

A structural verdict ("one all-reduce over 'model'") is a rule about one task; the student reads it best
next to what the course's own reference solution runs when compiled the same way (same target, inputs,
layout and device count: grader.grading.reference_figures keeps its collectives beside its operation
count). This module reads both programs the same way and says the first difference that matters, in
plain words, measured on both sides and claiming no cause:

1. a kind of collective one program runs and the other does not ("your program runs an all-gather over
   'model'; the reference's runs no all-gather");
2. the same kind over other devices: another mesh axis, or for a permute, another target for a device's
   data ("your collective-permute sends device 0's data to device 3; the reference's to device 1");
3. the same kind over the same devices along another dimension ("your reduce-scatter over 'model'
   splits dimension 0; the reference's splits dimension 1"), or returning a block of another rank;
4. how many times it runs;
5. more bytes per device than the reference's.

Only collectives that move data count, and only those the answer depends on (grader.suite.hlo's
``idle``; meshes.moves), on both sides alike, whoever asked for them (the program or XLA's partitioner):
what is compared is what runs. A count or a byte figure in a loop of unknown length is not compared.
Everything here is plain data and runs in the grader's process.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from grader.layout import plural
from grader.suite import hlo, meshes

# What a collective does with its dimension, for "your reduce-scatter splits dimension 0".
_ALONG = {"all-gather": "gathers along", "reduce-scatter": "splits", "all-to-all": "exchanges along"}


@dataclass(frozen=True)
class Step:
    """One collective of a program as compared: plain data, kept in the reference's figure."""

    op: str
    groups: tuple[tuple[int, ...], ...] | None  # replica groups, or a permute's (source, target) pairs
    dimensions: tuple[int, ...] | None
    rank: int             # the rank of the block it returns on each device
    bytes: int            # bytes each device puts in per execution
    times: int | None     # executions per run; None inside a loop of unknown length
    by_student: bool      # the program holds it itself (else XLA's partitioner added it)
    origin: str           # what the trace called it ("psum"), for the listing only
    kind: str = ""        # the program's operation it came from ("stablehlo.dot_general"), as hlo.Collective's
    reduction: str = ""   # how an all-reduce or reduce-scatter combines values ("add", "maximum")
    computed: bool = True  # what it moves was computed from the inputs (hlo.Collective's)
    outputs: tuple[int, ...] | None = None  # the program's results that can depend on it (hlo.Collective's)

    def plain(self) -> dict:
        return {"op": self.op, "groups": None if self.groups is None else [list(g) for g in self.groups],
                "dimensions": None if self.dimensions is None else list(self.dimensions), "rank": self.rank,
                "bytes": self.bytes, "times": self.times, "by_student": self.by_student, "origin": self.origin,
                "kind": self.kind, "reduction": self.reduction, "computed": self.computed,
                "outputs": None if self.outputs is None else list(self.outputs)}

    @classmethod
    def from_plain(cls, data: dict) -> Step:
        groups, dims = data["groups"], data["dimensions"]
        return cls(str(data["op"]), None if groups is None else tuple(tuple(int(d) for d in g) for g in groups),
                   None if dims is None else tuple(int(d) for d in dims), int(data["rank"]), int(data["bytes"]),
                   None if data["times"] is None else int(data["times"]), bool(data["by_student"]),
                   str(data["origin"]), str(data.get("kind", "")), str(data.get("reduction", "")),
                   bool(data.get("computed", True)),
                   None if data.get("outputs") is None else tuple(int(k) for k in data["outputs"]))


def steps(text: str) -> list[Step]:
    """The collectives of the compiled program ``text`` that move data the answer depends on, in order."""
    return [Step(c.op, c.groups, c.dimensions, _rank(c.shape), c.bytes, c.times, c.by_student, c.origin, c.kind,
                 c.reduction, c.computed, c.outputs) for c in hlo.select(text) if meshes.moves(c)]


# How an all-reduce combines the devices' values, as messages name it; a maximum and a minimum are one need (the
# maximum of x is minus the minimum of -x).
COMBINES = {"add": "a sum (lax.psum, lax.pmean)", "maximum": "a maximum or minimum (lax.pmax, lax.pmin)",
            "minimum": "a maximum or minimum (lax.pmax, lax.pmin)", "multiply": "a product"}


def missing_reductions(mine: list[Step], reference: list[Step]) -> list[str]:
    """How the reference's program combines the devices' values (:data:`COMBINES`) that no collective of the
    student's own (``mine``: their program's steps) does: a statistic the devices never combined was computed
    another way (on whole copies of the data, with operations the work count does not see)."""
    def combines(found, own):
        return {COMBINES[s.reduction] for s in found if s.reduction in COMBINES and (s.by_student or not own)}

    return sorted(combines(reference, False) - combines(mine, True))


def plain(found: list[Step]) -> list[dict]:
    return [s.plain() for s in found]


def from_plain(data: list[dict]) -> list[Step]:
    return [Step.from_plain(d) for d in data]


class Mesh:
    """The devices a program runs on, for wording where a collective runs: a mesh's axis names and sizes,
    or None for a program over plain devices (a jax.pmap), where a collective runs among all of them or
    among groups of them."""

    def __init__(self, mesh: tuple | None):
        self.names, self.sizes = (tuple(mesh[0]), tuple(mesh[1])) if mesh else (None, None)

    def axes(self, step) -> tuple[str, ...] | None:
        """The mesh axes a step (or an hlo.Collective: its op and groups are all that is read) runs over."""
        return None if self.names is None else meshes.axes_of(step, self.names, self.sizes)

    def place(self, step: Step):
        """What two collectives of one kind share when they run among the same devices: their mesh axes, or
        without a mesh their groups; for a permute, also where each device's data goes."""
        groups = None if step.groups is None else frozenset(
            tuple(g) if step.op == "collective-permute" else tuple(sorted(g)) for g in step.groups)
        axes = self.axes(step)
        if axes is not None:
            return (axes, groups) if step.op == "collective-permute" else axes
        return groups

    def over(self, step) -> str:
        """" over 'model'", " among devices (0, 2) and (1, 3)", or "" where no mesh tells more (all the devices
        of a plain program, a permute)."""
        axes = self.axes(step)
        if axes is not None:
            return " " + meshes.over_text(axes)
        if step.groups is None or step.op == "collective-permute" or len(step.groups) == 1:
            return ""
        shown = " and ".join(str(tuple(g)) for g in step.groups[:3])
        return f" among devices {shown}{' and others' if len(step.groups) > 3 else ''}"


def _a(op: str) -> str:
    return f"{'an' if op[0] in 'aeiou' else 'a'} {op}"


def _rank(shape: str) -> int:
    """The rank of an HLO result type (its first array: a merged tuple's)."""
    found = re.search(r"\[([\d,\s]*)\]", shape)
    return len([d for d in found.group(1).split(",") if d.strip()]) if found else 0


def total(found: list[Step], bytes_: bool) -> int | None:
    """How many times (or, with ``bytes_``, how many bytes) one device runs ``found`` over a run; None for a loop
    of unknown length."""
    if any(s.times is None for s in found):
        return None
    return sum((s.bytes if bytes_ else 1) * s.times for s in found)


IDLE = ", which carries nothing the result needs (not counted)"
# How an all-reduce combines what the devices put in, by what the trace called it (grader.suite.hlo reads a
# psum whose result the program divides as a pmean).
_COMBINES = {"psum": "adds up (lax.psum)", "pmean": "averages: its sum is divided afterwards (lax.pmean, or a psum then "
             "a division)", "pmax": "takes the maximum (lax.pmax)", "pmin": "takes the minimum (lax.pmin)"}


def listing(found, mesh: tuple | None = None, by_student: bool = False) -> list[str]:
    """Collectives (steps, or grader.suite.hlo's records) as lines: "1 all-reduce over 'model' (psum) of 60 bytes
    per device", the program's own first; an idle one (hlo's ``idle``) said as such, since it counts nowhere."""
    where = Mesh(mesh)
    tally: dict = {}
    unknown: dict = {}
    for s in found:
        if by_student and not s.by_student:
            continue
        key = (s.op, not s.by_student, where.over(s), s.origin, s.bytes, getattr(s, "idle", False))
        if s.times is None:
            unknown[key] = True
        else:
            tally[key] = tally.get(key, 0) + s.times
    lines = [f"{plural(times, op)}{over} {source(added, origin)}of {plural(n, 'byte')} per device{IDLE if idle else ''}"
             for (op, added, over, origin, n, idle), times in sorted(tally.items())]
    return lines + [f"{op}{over} {source(added, origin)}of {plural(n, 'byte')} in a loop of unknown length{IDLE if idle else ''}"
                    for (op, added, over, origin, n, idle) in sorted(unknown)]


def source(added: bool, origin: str) -> str:
    """Who asked for a collective: the program (the student's primitive), or XLA's partitioner (for what)."""
    if not added:
        return f"({origin}) " if origin else ""
    return f"({meshes.added_by_xla(origin)}) "


def _places(found: list[Step], op: str, where: Mesh) -> dict:
    """The steps of kind ``op`` by where they run, in order."""
    places: dict = {}
    for s in found:
        if s.op == op:
            places.setdefault(where.place(s), []).append(s)
    return places


def _permute_target(mine: Step, theirs: Step) -> str | None:
    """Where two permutes send one device's data differently, in words."""
    if mine.groups is None or theirs.groups is None:
        return None
    sent, wanted = dict(mine.groups), dict(theirs.groups)
    for source in sorted(set(sent) | set(wanted)):
        if sent.get(source) != wanted.get(source):
            to = lambda pairs: f"to device {pairs[source]}" if source in pairs else "nowhere"  # noqa: E731
            return (f"your collective-permute sends device {source}'s data {to(sent)}; the reference's sends it "
                    f"{to(wanted)}")
    return None


def _other_devices(op: str, mine: dict, theirs: dict, where: Mesh) -> str:
    """The sentence for collectives of one kind that run among other devices than the reference's."""
    s = next((found[0] for place, found in mine.items() if place not in theirs), next(iter(mine.values()))[0])
    r = next((found[0] for place, found in theirs.items() if place not in mine), next(iter(theirs.values()))[0])
    if op == "collective-permute" and where.over(s) == where.over(r):
        said = _permute_target(s, r)
        if said:
            return said
    return (f"your {op} runs{where.over(s) or ' among other devices'}; the reference's runs"
            f"{where.over(r) or ' among other devices'}")


def _other_dimension(op: str, mine: list[Step], theirs: list[Step], where: Mesh) -> str | None:
    """The sentence for collectives of one kind among the same devices that gather or split along another
    dimension than any of the reference's there (several, in any order), or return blocks of another rank."""
    shape = lambda s: (s.rank, s.dimensions)  # noqa: E731
    extra = Counter(map(shape, mine)) - Counter(map(shape, theirs))
    lacking = Counter(map(shape, theirs)) - Counter(map(shape, mine))
    if not extra or not lacking:
        return None
    s = next(s for s in mine if shape(s) in extra)
    r = next((r for r in theirs if shape(r) in lacking and r.rank == s.rank),
             next(r for r in theirs if shape(r) in lacking))
    if s.rank == r.rank and s.dimensions and r.dimensions:
        verb, dims = _ALONG[op], lambda d: ", ".join(map(str, d))  # noqa: E731
        return (f"your {op}{where.over(s)} {verb} dimension {dims(s.dimensions)}; the reference's {verb} dimension "
                f"{dims(r.dimensions)}")
    if s.rank != r.rank:
        return (f"your {op}{where.over(s)} returns a block of {plural(s.rank, 'dimension')} on each device; the "
                f"reference's of {r.rank}")
    return None


def beyond(student: list[Step], reference: list[Step], slack: float, mesh: tuple | None = None,
           alike: dict[str, str] | None = None) -> str | None:
    """Where the student's collectives (those the answer needs, whoever asked for them) go beyond the reference's,
    in plain words: a kind the reference's program never runs, or a kind whose executions together move more than
    ``slack`` times the bytes per device the reference's move in it; else None. ``alike``: kinds the task accepts
    in place of another ({"all-to-all": "reduce-scatter"}), counted as that one. Whatever a collective is called,
    combining the devices' values takes a kind and its bytes: an all-reduce written as a reduce-scatter of n copies
    is a reduce-scatter the reference does not run, or n times its bytes. One XLA's partitioner added to move
    inputs every device already holds whole, as they are (a slice of a padded copy), combines nothing and is
    left out; one it added to move computed values (partial products resharded between two shard_maps) or an
    input handed over in blocks counts."""
    where, alike = Mesh(mesh), alike or {}
    student = [s for s in student if s.by_student or s.computed]
    kinds = list(dict.fromkeys(alike.get(s.op, s.op) for s in student))
    for kind in kinds:
        mine = [s for s in student if alike.get(s.op, s.op) == kind]
        theirs = [s for s in reference if s.op == kind]
        named = " and ".join(dict.fromkeys(s.op for s in mine))
        if not theirs:
            s = mine[0]
            return (f"your program runs {_a(s.op)}{where.over(s)} {source(not s.by_student, s.origin)}where the "
                    f"reference's runs no {s.op}")
        sent, bound = total(mine, True), total(theirs, True)
        if bound is None:
            continue
        if sent is None:
            return f"your program runs {named}s{where.over(mine[0])} in a loop whose length is unknown when it compiles"
        if sent > slack * bound:
            return (f"your program's {named}s{where.over(mine[0])} move {sent} bytes per device, "
                    f"{sent / max(bound, 1):.1f} times what the reference's {kind}s move ({bound}), and the bound is "
                    f"{slack:g} times that")
    return None


def _reaching(found: list[Step], results: frozenset[int]) -> list[Step]:
    """The collectives that some of ``results`` (the program's results, by position) can depend on."""
    return [s for s in found if results & set(s.outputs)]


def difference(student: list[Step], reference: list[Step], mesh: tuple | None = None,
               results: frozenset[int] | None = None) -> str | None:
    """The first difference that matters between the student's collectives and the reference's, in plain
    words, or None where none is measured. ``mesh``: (axis names, sizes) of the mesh both run on, or None
    for a program over plain devices (a jax.pmap). ``results``: the program's results (by position) found
    wrong; only the collectives they can depend on, in both programs, are compared, since no other can
    explain them (a loss summed where the reference averages does not make the new weights wrong)."""
    if results is not None and all(s.outputs is not None for s in student + reference):  # else one result, or
        student, reference = _reaching(student, results), _reaching(reference, results)  # a figure kept before
    where = Mesh(mesh)
    ops, wanted = list(dict.fromkeys(s.op for s in student)), list(dict.fromkeys(s.op for s in reference))
    for op in ops:  # 1. a kind one runs and the other does not
        if op not in wanted:
            s = next(s for s in student if s.op == op)
            return f"your program runs {_a(op)}{where.over(s)}; the reference's program runs no {op}"
    for op in wanted:
        if op not in ops:
            r = next(s for s in reference if s.op == op)
            return f"the reference's program runs {_a(op)}{where.over(r)}; yours runs no {op}"
    placed = [(op, _places(student, op, where), _places(reference, op, where)) for op in wanted]
    for op, mine, theirs in placed:  # 2. among other devices
        if set(mine) != set(theirs):
            return _other_devices(op, mine, theirs, where)
    for op, mine, theirs in placed:  # 3. along another dimension, or returning a block of another rank
        if op not in _ALONG:
            continue
        for place, found in mine.items():
            said = _other_dimension(op, found, theirs[place], where)
            if said:
                return said
    for op, mine, theirs in placed:  # 4. how many times
        for place, found in mine.items():
            times, want = total(found, False), total(theirs[place], False)
            if times is not None and want is not None and times != want:
                return f"your program runs {plural(times, op)}{where.over(found[0])}; the reference's runs {want}"
    for op, mine, theirs in placed:  # 5. more bytes per device
        for place, found in mine.items():
            sent, want = total(found, True), total(theirs[place], True)
            if sent is not None and want is not None and sent > want:
                return f"your {op}s{where.over(found[0])} move {sent} bytes per device; the reference's move {want}"
    for op, mine, theirs in placed:  # 6. the same collectives, combining what they carry otherwise
        for place, found in mine.items():
            ours, want = ({s.origin for s in steps_ if s.origin in _COMBINES} for steps_ in (found, theirs[place]))
            if ours and want and ours != want:
                return (f"your program's {op}{where.over(found[0])} {_COMBINES[min(ours - want or ours)]}; the "
                        f"reference's {_COMBINES[min(want - ours or want)]}")
    return None
