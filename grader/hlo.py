"""Reading compiled HLO text: which collectives a program runs, how often, and how many bytes.

Structural checks ("one all-reduce, no all-gather") are graded from the optimised HLO that
``jax.jit(f).lower(...).compile().as_text()`` prints in the worker. Reading it right means:

* a collective inside a ``while`` body runs once per iteration: multiply by the loop's
  ``known_trip_count`` (unknown trip counts are reported as such, never guessed);
* fusions, calls and conditional branches are followed into the computations they call;
* XLA may merge independent psums into one tuple all-reduce: that is one collective with several
  operands (``operands``), and its bytes are the sum of the operands' bytes;
* async pairs (``all-reduce-start`` / ``-done``) count once, as the base op;
* SPMD partitioning may add collectives of its own (e.g. reading element 0 of a sharded result);
  ``origin`` says which primitive a collective came from (metadata ``op_name``), so a check can
  count only the collectives the student wrote (``psum``, ``all_gather``, ``ppermute``...).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

COLLECTIVES = ("all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter",
               "collective-broadcast")
STUDENT_PRIMITIVES = ("psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "all_to_all",
                      "psum_scatter", "reduce_scatter", "pbroadcast")
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1,
                "f8e4m3fn": 1, "f8e5m2": 1}
_COMP_RE = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][\w\-]*)\((.*)$")
_ARRAY_RE = re.compile(r"\b([a-z]+\d*(?:e\d+m\d+(?:fn)?)?)\[([\d,\s]*)\]")


@dataclass(frozen=True)
class Collective:
    """One collective instruction, as many times as the program runs it."""

    op: str            # base opcode, e.g. "all-reduce"
    shape: str         # result type text, e.g. "f32[4,10]{1,0}" or a tuple
    operands: int      # number of arrays it moves (tuple all-reduce: several)
    bytes: int         # bytes of the result per execution (sum over a tuple)
    times: int | None  # executions per program run; None if inside a loop of unknown trip count
    origin: str        # the JAX primitive in op_name metadata ("psum", "squeeze", ...), or ""
    computation: str

    @property
    def by_student(self) -> bool:
        """True if the collective came from a collective primitive, not from partitioning."""
        return self.origin in STUDENT_PRIMITIVES


def shape_bytes(shape: str) -> tuple[int, int]:
    """(number of arrays, total bytes) of an HLO result type such as ``(f32[4]{0}, s32[])``."""
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
    m = re.search(r"backend_config=(\{.*?\})(?:,\s*\w+=|\s*$)", rest)
    if m:
        try:
            n = json.loads(m.group(1)).get("known_trip_count", {}).get("n")
            return int(n) if n is not None else None
        except (ValueError, AttributeError):
            pass
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', rest)
    return int(m.group(1)) if m else None


def _origin(rest: str) -> str:
    m = re.search(r'op_name="([^"]*)"', rest)
    if not m:
        return ""
    last = m.group(1).rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"\[.*$", "", last)


def collectives(text: str) -> list[Collective]:
    """Every collective reachable from ENTRY, with how many times one program run executes it."""
    comps, entry = parse_computations(text)
    found: list[Collective] = []

    def walk(name: str, times: int | None, stack: tuple[str, ...]):
        if name not in comps or name in stack:
            return
        for ins in comps[name]:
            base = ins.opcode[:-6] if ins.opcode.endswith("-start") else ins.opcode
            if base in COLLECTIVES and not ins.opcode.endswith("-done"):
                operands, nbytes = shape_bytes(ins.shape)
                if ins.opcode.endswith("-start") and ins.shape.startswith("("):
                    operands, nbytes = max(1, operands // 2), nbytes // 2  # (inputs, outputs) pair
                found.append(Collective(base, ins.shape, operands, nbytes, times, _origin(ins.rest), name))
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


def count(text: str, op: str, by_student: bool = False) -> int | None:
    """Executions of ``op`` per run (None if some run inside a loop of unknown trip count)."""
    total = 0
    for c in collectives(text):
        if c.op == op and (c.by_student or not by_student):
            if c.times is None:
                return None
            total += c.times
    return total


def bytes_moved(text: str, ops=COLLECTIVES) -> int | None:
    """Sum of result bytes of the given collectives over one run (None if a trip count is unknown)."""
    total = 0
    for c in collectives(text):
        if c.op in ops:
            if c.times is None:
                return None
            total += c.bytes * c.times
    return total
