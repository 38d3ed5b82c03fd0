"""Reading compiled HLO text: which collectives a program runs, how often, and how many bytes.

Structural checks ("one all-reduce, no all-gather") are graded from the optimised HLO of the
student's exported program, compiled by a clean worker (``student.program``). That text is not the program
the student wrote, so reading it right means knowing what XLA did to it (each rule below has a
unit test on real HLO in tests/grader/suite/test_hlo.py):

* XLA may merge independent psums into one tuple all-reduce and drop a duplicate psum of the
  same value: one instruction then carries several arrays (``operands``), and its bytes are the
  sum of theirs. Count instructions to ask "how many rounds of communication", bytes to ask
  "how much";
* a collective inside a ``while`` body (``fori_loop``, ``scan``) appears once but runs once per
  iteration: it is multiplied by the loop's ``known_trip_count``, nested loops multiply, and an
  unknown trip count is reported as ``times=None``, never guessed;
* fusions and calls are followed into the computations they call, and every branch of a
  conditional as if it ran: an upper bound, since which branch runs is known only at run time;
* ``pmean`` is a psum followed by a multiply by 1/n: it compiles to an all-reduce whose origin
  is ``psum``; inside ``shard_map`` psum is recorded as ``psum_invariant``, read as ``psum``;
* bytes come from the *operand* shapes (what each device puts in), not the result: an all-gather's
  result is n times larger than what a device sends;
* SPMD partitioning may add collectives of its own (e.g. reading element 0 of a sharded result);
  ``origin`` says which primitive a collective came from (metadata ``op_name``), so a check can
  count only the collectives the student wrote (``by_student``);
* ``groups`` are the replica groups (which devices reduce together): a psum over one axis of a
  2-D mesh has one group per row or column of the mesh (:mod:`grader.suite.replica_groups` reads
  each form XLA prints them in; :mod:`grader.suite.meshes` names the mesh axis they run over);
* an SPMD program's shapes are one device's: :func:`output_shapes` says how much of each output
  a device holds, so whether a result (or an updated parameter) stayed split over the devices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grader.suite import replica_groups

COLLECTIVES = ("all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter",
               "collective-broadcast")
STUDENT_PRIMITIVES = ("psum", "pmax", "pmin", "all_gather", "ppermute", "all_to_all", "psum_scatter",
                      "reduce_scatter", "pbroadcast")
# Names JAX records for a primitive in some contexts, read as the primitive the student called.
_ORIGIN_ALIASES = {"psum_invariant": "psum", "all_gather_invariant": "all_gather"}
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1,
                "f8e4m3fn": 1, "f8e5m2": 1}
_COMP_RE = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][\w\-]*)\((.*)$")
_ARRAY_RE = re.compile(r"\b([a-z]+\d*(?:e\d+m\d+(?:fn)?)?)\[([\d,\s]*)\]")


@dataclass(frozen=True)
class Collective:
    """One collective instruction, with how many times one run of the program executes it."""

    op: str            # base opcode, e.g. "all-reduce"
    shape: str         # result type text, e.g. "f32[4,10]{1,0}" or a tuple
    operands: int      # number of arrays it moves (a merged tuple all-reduce: several)
    bytes: int         # bytes each device puts in per execution: the sum of its operands' sizes
    times: int | None  # executions per program run; None if inside a loop of unknown trip count
    origin: str        # the JAX primitive in op_name metadata ("psum", "squeeze", ...), or ""
    computation: str
    groups: tuple[tuple[int, ...], ...] | None = None  # replica groups / source-target pairs

    @property
    def by_student(self) -> bool:
        """True if the collective came from a collective primitive, not from partitioning."""
        return self.origin in STUDENT_PRIMITIVES


def shape_bytes(shape: str) -> tuple[int, int]:
    """(number of arrays, total bytes) of an HLO type such as ``(f32[4]{0}, s32[])``."""
    arrays = _ARRAY_RE.findall(shape)
    total = 0
    for dtype, dims in arrays:
        n = 1
        for d in dims.split(","):
            if d.strip():
                n *= int(d)
        total += n * _DTYPE_BYTES.get(dtype, 4)
    return len(arrays), total


@dataclass
class _Instr:
    name: str
    shape: str
    opcode: str
    rest: str


def parse_computations(text: str) -> tuple[dict[str, list[_Instr]], str | None]:
    """Computations by name, and the name of the ENTRY computation."""
    comps: dict[str, list[_Instr]] = {}
    entry, current = None, None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            m = _COMP_RE.match(stripped)
            if m:
                current = m.group(1)
                comps[current] = []
                if stripped.startswith("ENTRY"):
                    entry = current
            continue
        if stripped == "}":
            current = None
            continue
        m = _INSTR_RE.match(line)
        if m:
            comps[current].append(_Instr(m.group(1), m.group(2), m.group(3), m.group(4)))
    return comps, entry


def _operand_list(rest: str) -> list[str]:
    """The operand texts of an instruction: ``rest`` starts just after its opening parenthesis."""
    depth, items, current = 1, [], ""
    for ch in rest:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                break
        if ch == "," and depth == 1:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return [i.strip() for i in items if i.strip()]


def _operand_bytes(rest: str, shapes: dict[str, str]) -> tuple[int, int]:
    """(arrays, bytes) of the operands, whose types are those of the instructions that made them."""
    arrays = total = 0
    for name in _operand_list(rest):
        n, b = shape_bytes(shapes.get(name.lstrip("%"), ""))
        arrays, total = arrays + n, total + b
    return arrays, total


def _called(rest: str) -> list[tuple[str, str]]:
    """(attribute, computation) pairs an instruction calls."""
    out = []
    for attr in ("calls", "to_apply", "body", "condition"):
        for m in re.finditer(rf"\b{attr}=%?([\w.\-]+)", rest):
            out.append((attr, m.group(1)))
    for m in re.finditer(r"\bbranch_computations=\{([^}]*)\}", rest):
        out += [("branch", n.strip().lstrip("%")) for n in m.group(1).split(",") if n.strip()]
    for attr in ("true_computation", "false_computation"):
        for m in re.finditer(rf"\b{attr}=%?([\w.\-]+)", rest):
            out.append(("branch", m.group(1)))
    return out


def _trip_count(rest: str) -> int | None:
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', rest)
    return int(m.group(1)) if m else None


def _origin(rest: str) -> str:
    m = re.search(r'op_name="([^"]*)"', rest)
    if not m:
        return ""
    last = re.sub(r"\[.*$", "", m.group(1).rstrip("/").rsplit("/", 1)[-1])
    return _ORIGIN_ALIASES.get(last, last)


def collectives(text: str) -> list[Collective]:
    """Every collective reachable from ENTRY, with how many times one program run executes it."""
    comps, entry = parse_computations(text)
    found: list[Collective] = []

    def walk(name: str, times: int | None, stack: tuple[str, ...]):
        if name not in comps or name in stack:
            return
        shapes = {ins.name: ins.shape for ins in comps[name]}
        for ins in comps[name]:
            base = ins.opcode[:-6] if ins.opcode.endswith("-start") else ins.opcode
            if base in COLLECTIVES and not ins.opcode.endswith("-done"):
                operands, nbytes = _operand_bytes(ins.rest, shapes)
                found.append(Collective(base, ins.shape, operands, nbytes, times, _origin(ins.rest), name,
                                        replica_groups.parse(ins.rest)))
            for attr, callee in _called(ins.rest):
                if base in COLLECTIVES or attr == "condition":
                    continue  # a collective's to_apply is its reducer; a loop condition holds none
                inner = times
                if ins.opcode == "while" and attr == "body":
                    trip = _trip_count(ins.rest)
                    inner = None if (trip is None or times is None) else times * trip
                walk(callee, inner, stack + (name,))

    if entry:
        walk(entry, 1, ())
    return found


def select(text: str, ops=COLLECTIVES, by_student: bool = False) -> list[Collective]:
    """The collectives of the given opcode(s), only those the student wrote if ``by_student``."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    return [c for c in collectives(text) if c.op in ops and (c.by_student or not by_student)]


def count(text: str, op, by_student: bool = False) -> int | None:
    """Executions of ``op`` (one opcode or several) per run; None if one is in a loop of unknown length."""
    chosen = select(text, op, by_student)
    if any(c.times is None for c in chosen):
        return None
    return sum(c.times for c in chosen)


def bytes_moved(text: str, ops=COLLECTIVES, by_student: bool = False) -> int | None:
    """Bytes each device puts into the given collectives over one run; None if a trip count is unknown."""
    chosen = select(text, ops, by_student)
    if any(c.times is None for c in chosen):
        return None
    return sum(c.bytes * c.times for c in chosen)


def _entry_layout(text: str) -> str | None:
    """The ``entry_computation_layout={...}`` text of the module's header, braces balanced."""
    start = text.find("entry_computation_layout={")
    if start < 0:
        return None
    depth, begin = 0, start + len("entry_computation_layout=")
    for i in range(begin, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[begin + 1:i]
    return None


def output_shapes(text: str) -> list[tuple[int, ...]] | None:
    """The shape of the block each device holds of each output of the program, in order (the whole
    array where it is replicated); None if the module does not print its entry layout."""
    layout = _entry_layout(text)
    if layout is None or "->" not in layout:
        return None
    return [tuple(int(d) for d in dims.split(",") if d.strip())
            for _, dims in _ARRAY_RE.findall(layout.rpartition("->")[2])]
