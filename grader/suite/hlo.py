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
* ``pmean`` is a psum followed by a division by n: it compiles to an all-reduce whose origin is
  ``psum``, read as ``pmean`` where the program divides the all-reduce's result (a psum divided by
  hand reads the same: for messages only); inside ``shard_map`` psum is recorded as
  ``psum_invariant``, read as ``psum``;
* bytes come from the *operand* shapes (what each device puts in), not the result: an all-gather's
  result is n times larger than what a device sends;
* SPMD partitioning may add collectives of its own (e.g. reading element 0 of a sharded result).
  Program mode's clean worker names every operation of the program before compiling it
  (grader.sandbox.program_labels), so an instruction's ``op_name`` ends with the operation it came
  from: ``kind`` (a collective operation of the program itself, ``by_student``, or the operation
  the partitioner added this one for), which the student's process cannot choose, and ``origin``,
  the JAX primitive the student's trace called it (``psum``), which it can: for messages only;
* a collective of the program whose result the answer does not depend on is ``idle`` and is not
  counted: the clean worker replaced its result by zeros, ran the program on the drawn inputs and
  saw the same answer (grader.sandbox.program_ablation), which covers a psum of a constant or of
  ``x - x``, a result multiplied away, a dead branch, a select that never picks it; for a collective
  the partitioner added, and HLO of another source, the data flow decides (grader.suite.hlo_flow:
  it moves only constants, or its result cannot reach the output);
* ``groups`` are the replica groups (which devices reduce together): a psum over one axis of a
  2-D mesh has one group per row or column of the mesh (:mod:`grader.suite.replica_groups` reads
  each form XLA prints them in; :mod:`grader.suite.meshes` names the mesh axis they run over);
* :func:`operations` counts the arithmetic one device performs over a run (a dot's multiply-adds, a
  loop's body once per iteration), for a task about splitting work: a program that computes everything
  on every device, at once or in chunks, and adds a collective for show does about n times the
  reference program's work per device (grader.suite.work compares the two);
* an SPMD program's shapes are one device's: :func:`output_shapes` says how much of each output
  a device holds, so whether a result (or an updated parameter) stayed split over the devices;
* a module compiled for a GPU or a TPU (cuBLAS / cuDNN calls, asynchronous collective pairs) is first
  rewritten into the forms above by :mod:`grader.suite.hlo_platforms`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from grader.protocol import COLLECTIVE_INDEX, FRESH_MARK, IDLE_MARK, LABEL_SEPARATOR, PROGRAM_COLLECTIVES
from grader.suite import replica_groups
from grader.suite.hlo_flow import SAME_FOR_EVERY_INPUT, VARIES, Flow, level, parameter_number, tuple_index
from grader.suite import hlo_platforms
from grader.suite.hlo_uniform import Uniform

COLLECTIVES = ("all-reduce", "all-gather", "collective-permute", "all-to-all", "reduce-scatter",
               "collective-broadcast")
# Names JAX records for a primitive in some contexts, read as the primitive the student called.
_ORIGIN_ALIASES = {"psum_invariant": "psum", "all_gather_invariant": "all_gather", "reduce_scatter": "psum_scatter"}
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "s4": 1, "u4": 1,
                "f8e4m3fn": 1, "f8e5m2": 1}
_COMP_RE = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([a-z][\w\-]*)\((.*)$")
_ARRAY_RE = re.compile(r"\b([a-z]+\d*(?:e\d+m\d+[a-z]*)?)\[([\d,\s]*)\]")  # f8e4m3fnuz, f8e8m0fnu: every fp8 kind


# Instructions that move or select data or structure the program, rather than compute (a negation too: it flips a
# sign and combines nothing, so -lax.pmin(-x) costs what lax.pmax does): everything else is arithmetic for work().
# A comparison and a clamp are arithmetic: a maximum written as compares and selects, or as clamps, computes as much
# as one written with jnp.maximum (round 55); on indices or masks alone they are no work (_input_free).
NOT_WORK = frozenset({"parameter", "constant", "iota", "tuple", "get-tuple-element", "bitcast", "reshape", "copy",
                      "copy-start", "copy-done", "broadcast", "transpose", "slice", "dynamic-slice",
                      "dynamic-update-slice", "pad", "concatenate", "reverse", "gather", "convert", "bitcast-convert",
                      "partition-id", "replica-id", "after-all", "fusion", "call", "while", "conditional", "select",
                      "negate", "opt-barrier", "add-dependency", "domain", "get-dimension-size",
                      "custom-call", *COLLECTIVES, *(f"{c}-start" for c in COLLECTIVES),
                      *(f"{c}-done" for c in COLLECTIVES)})


@dataclass(frozen=True)
class Collective:
    """One collective instruction, with how many times one run of the program executes it."""

    op: str            # base opcode, e.g. "all-reduce"
    shape: str         # result type text, e.g. "f32[4,10]{1,0}" or a tuple
    operands: int      # number of arrays it moves (a merged tuple all-reduce: several)
    bytes: int         # bytes each device puts in per execution: the sum of its operands' sizes
    times: int | None  # executions per program run; None if inside a loop of unknown trip count
    origin: str        # what the student's trace called it ("psum", "squeeze", ...), or "": for messages only
    computation: str
    groups: tuple[tuple[int, ...], ...] | None = None  # replica groups / source-target pairs
    kind: str = ""     # the program's operation it came from ("stablehlo.all_reduce", "stablehlo.reshape", ...)
    reads_input: bool = True   # what it moves depends on the program's inputs
    feeds_output: bool = True  # the program's result can depend on what it returns
    measured_idle: bool | None = None  # the clean worker's measurement: the answer did not change without it
    instruction: str = field(default="", compare=False)  # its name in the HLO text (the GPU form renames it)
    dimensions: tuple[int, ...] | None = None  # an all-gather's, reduce-scatter's or all-to-all's dimensions={...}
    reduction: str = ""  # how an all-reduce or reduce-scatter combines the devices' values: "add", "maximum", ...
    computed: bool = True  # what it moves is computed from the inputs, or an input not every device holds whole
    outputs: tuple[int, ...] | None = None  # the program's results that can depend on it (None: it returns one)
    moves_nothing: bool = False  # what it moves is the same on every device (grader.suite.hlo_uniform)

    @property
    def a(self) -> str:
        """The op with its article, for messages: "an all-reduce", "a collective-permute"."""
        return f"{'an' if self.op[0] in 'aeiou' else 'a'} {self.op}"

    @property
    def by_student(self) -> bool:
        """True if the program holds this collective itself; False if XLA's partitioner added it."""
        return self.kind in PROGRAM_COLLECTIVES

    @property
    def idle(self) -> bool:
        """True if it communicates nothing the answer needs: it moves only values every device already holds
        (read from the program, :attr:`moves_nothing`), or the answer does not depend on it: measured by the
        clean worker for a collective of the program (its result replaced by zeros changed nothing); for one
        the partitioner added, or HLO of another source, read from the data flow (it moves only constants, or
        nothing of what it returns can reach the result)."""
        if self.moves_nothing:
            return True
        if self.measured_idle is not None:
            return self.measured_idle
        return not (self.reads_input and self.feeds_output)


def shape_bytes(shape: str) -> tuple[int, int]:
    """(number of arrays, total bytes) of an HLO type such as ``(f32[4]{0}, s32[])``."""
    arrays = _ARRAY_RE.findall(shape)
    total = 0
    for dtype, dims in arrays:
        n = 1
        for d in dims.split(","):
            if d.strip():
                n *= int(d)
        total += n * _dtype_bytes(dtype)
    return len(arrays), total


def _dtype_bytes(dtype: str) -> int:
    """Bytes of one element: the table's, else the width the name starts with (f8e4m3fnuz: 8 bits), else 4."""
    if dtype in _DTYPE_BYTES:
        return _DTYPE_BYTES[dtype]
    bits = re.match(r"[a-z]+(\d+)", dtype)
    return max(1, int(bits.group(1)) // 8) if bits else 4


@dataclass
class _Instr:
    name: str
    shape: str
    opcode: str
    rest: str
    operands: list[str] = field(default_factory=list)  # the names of the instructions it reads
    calls: list[tuple[str, str]] = field(default_factory=list)  # (attribute, computation) it calls


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
        if stripped == "}" or stripped.startswith("},"):  # "}, execution_thread=..." ends one too
            current = None
            continue
        m = _INSTR_RE.match(line)
        if m:
            rest = m.group(4)
            operands = [_COMMENT.sub(" ", text).split()[-1].lstrip("%") for text in _operand_list(rest)]
            comps[current].append(_Instr(m.group(1), m.group(2), m.group(3), rest, operands, _called(rest)))
    return comps, entry


# XLA numbers every fifth operand of a long list in a comment glued to it: "/*index=5*/%dot.26".
_COMMENT = re.compile(r"/\*.*?\*/")


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


def _operand_bytes(names: list[str], shapes: dict[str, str], idle=()) -> tuple[int, int]:
    """(arrays, bytes) of the operands ``names`` (an asynchronous chain's: its start's and those its updates
    bind, grader.suite.hlo_platforms), whose types are those of the instructions that made them; where
    ``idle`` says for each operand whether the collective it came from was measured idle (XLA merged
    several into one instruction), the idle ones move nothing the answer needs and are left out."""
    arrays = total = 0
    if len(idle) == len(names) and not all(idle):
        names = [n for n, unused in zip(names, idle) if not unused]
    for name in names:
        n, b = shape_bytes(shapes.get(name, ""))
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


_MEMBER = re.compile(rf"([\w.]+){LABEL_SEPARATOR}(\w*){LABEL_SEPARATOR}{COLLECTIVE_INDEX}\d+"
                     rf"({LABEL_SEPARATOR}{IDLE_MARK})?(?:{LABEL_SEPARATOR}{FRESH_MARK})?")


def _origin(rest: str) -> tuple[str, str, list[bool]]:
    """(kind, origin, measured) from an instruction's op_name: the program's operation it came from, as
    the clean worker named it ("" in HLO of another source), what the student's trace called it, and
    for each collective of the program it carries (XLA may merge several into one instruction, named
    ``(A:B)``), whether the clean worker found the answer independent of it; empty where nothing was
    measured (a collective the partitioner added, HLO of another source)."""
    m = re.search(r'op_name="([^"]*)"', rest)
    if not m:
        return "", "", []
    name = m.group(1).rstrip("/")
    merged = re.search(r"/?\(([^()]*)\)$", name)
    members = _MEMBER.findall(merged.group(1) if merged else name.rsplit("/", 1)[-1])
    if members:
        kind, label = members[0][0], members[0][1]
    else:  # a collective the partitioner added, or several it merged into one, named (A:B) by the first
        kind, separator, label = (merged.group(1) if merged else name.rsplit("/", 1)[-1]).partition(LABEL_SEPARATOR)
        if not separator:
            kind, label = "", kind
        label = re.sub(r"\[.*$", "", label.partition(LABEL_SEPARATOR)[0])
    return kind, _ORIGIN_ALIASES.get(label, label), [bool(idle) for _, _, idle in members]


def _varies(value) -> bool:
    return level(value) == VARIES


@functools.lru_cache(maxsize=8)
def _program(text: str) -> tuple[dict[str, list[_Instr]], str | None, Flow]:
    """The parsed program and its data flow: a test asks several questions of one text (kept, not changed)."""
    comps, entry = parse_computations(text)
    comps = hlo_platforms.normalise(comps)  # GPU/TPU forms read as the CPU's (grader.suite.hlo_platforms)
    return comps, entry, Flow(comps, entry or "")


def _base(opcode: str) -> str:
    return opcode[:-6] if opcode.endswith("-start") else opcode


# Instructions that apply the computation they call to each element (or pair) of their operands.
_PER_ELEMENT = frozenset({"reduce", "reduce-window", "map", "scatter", "sort", "select-and-scatter"})


def _runs(comps: dict[str, list[_Instr]], entry: str | None) -> dict[str, int | None]:
    """How many times one program run executes each computation reachable from ENTRY (None: inside a
    loop of unknown trip count); a computation called from several places adds up their counts. A computation an
    instruction applies to each element (:data:`_PER_ELEMENT`: a reducer, a map's body, a sort's comparator) counts 0
    here: :func:`_operations` counts its arithmetic once per element, at the instruction."""
    runs: dict[str, int | None] = {}

    def walk(name: str, times: int | None, stack: tuple[str, ...]):
        if name not in comps or name in stack:
            return
        before = runs.get(name, 0)
        runs[name] = None if (before is None or times is None) else before + times
        for ins in comps[name]:
            for attr, callee in ins.calls:
                if _base(ins.opcode) in COLLECTIVES:
                    continue  # its to_apply is its reducer
                inner = 0 if ins.opcode in _PER_ELEMENT and times is not None else times
                if ins.opcode == "while" and attr in ("body", "condition"):
                    trip = _trip_count(ins.rest)
                    inner = None if (trip is None or times is None) else times * trip
                walk(callee, inner, stack + (name,))

    if entry:
        walk(entry, 1, ())
    return runs


def _reduction(ins: _Instr, comps: dict) -> str:
    """The operation an all-reduce or reduce-scatter combines values with: the last arithmetic instruction of
    the computation it applies ("add", "maximum"), or ""."""
    body = next((comps.get(comp, []) for attribute, comp in ins.calls if attribute == "to_apply"), [])
    return next((i.opcode for i in reversed(body) if i.opcode not in NOT_WORK), "")


def _dimensions(rest: str) -> tuple[int, ...] | None:
    """The ``dimensions={...}`` a collective gathers along or splits (None where it prints none: an all-reduce)."""
    m = re.search(r"\bdimensions=\{([\d,\s]*)\}", rest)
    return tuple(int(d) for d in m.group(1).split(",") if d.strip()) if m else None


# Instructions that pass a value on unchanged, between a collective and what the program does with its result.
_PASSES_ON = frozenset({"bitcast", "copy", "reshape", "all-reduce-done"})


def _divided(instructions: list[_Instr], name: str, depth: int = 4) -> bool:
    """Whether the program divides the result of instruction ``name`` (what a pmean does after its psum):
    a user whose operation is a division, directly or after instructions that pass the value on."""
    for user in instructions:
        if name not in user.operands:
            continue
        if _origin(user.rest)[1] == "div":
            return True
        if depth and user.opcode in _PASSES_ON and _divided(instructions, user.name, depth - 1):
            return True
    return False


@functools.lru_cache(maxsize=8)
def _inputs_read(text: str) -> tuple[set[tuple[str, str]], dict[str, set[str]], dict[str, int]]:
    """(:func:`_input_free`, :func:`_computed`, :func:`_loop_fusions`) of the program ``text``: read once, asked
    by many rules."""
    comps, entry, _ = _program(text)
    free = _input_free(comps, entry)
    return free, _computed(comps, entry, free), _loop_fusions(comps)


def _computed(comps: dict[str, list[_Instr]], entry: str | None, free: set[tuple[str, str]]) -> dict[str, set[str]]:
    """Per computation, the instructions whose values carry arithmetic on the program's inputs: an arithmetic
    instruction or a reduction across devices on a value that depends on an input (:func:`_input_free`'s others),
    a fusion or call whose computation holds one, or anything made from such a value; and an input that not every
    device holds whole (an ENTRY parameter not ``sharding={replicated}``: moving it is communication). A value
    only moved, sliced, padded or selected from inputs every device holds carries none. A parameter of any
    computation but ENTRY counts as computed (what its callers pass is not followed). ``free``:
    :func:`_input_free`'s."""
    holds: dict[str, bool] = {}

    def arithmetic_in(name: str) -> bool:
        if name not in holds:
            holds[name] = False  # a computation that calls itself adds nothing the first visit has not
            holds[name] = any((i.opcode not in NOT_WORK and (name, i.name) not in free)
                              or any(arithmetic_in(c) for _, c in i.calls if c in comps) for i in comps[name])
        return holds[name]

    carried: dict[str, set[str]] = {}
    for name, instrs in comps.items():
        found: set[str] = set()
        for ins in instrs:
            if (name, ins.name) in free:
                continue
            if (ins.opcode == "parameter" and (name != entry or "sharding={replicated}" not in ins.rest)) \
                    or ins.opcode not in NOT_WORK \
                    or _base(ins.opcode) in ("all-reduce", "reduce-scatter") \
                    or any(op in found for op in ins.operands) \
                    or any(arithmetic_in(c) for attr, c in ins.calls if c in comps and attr != "to_apply"):
                found.add(ins.name)
        carried[name] = found
    return carried


@functools.lru_cache(maxsize=8)
def _uniform(text: str) -> Uniform:
    """Which values of the program are the same on every device (kept, as :func:`_program`)."""
    comps, entry, _ = _program(text)
    return Uniform(comps, entry or "")


def collectives(text: str) -> list[Collective]:
    """Every collective reachable from ENTRY, with how many times one program run executes it (idle
    ones too)."""
    comps, entry, flow = _program(text)
    computed, results, uniform = _inputs_read(text)[1], flow.outputs(), _uniform(text)
    found: list[Collective] = []
    for name, times in _runs(comps, entry).items():
        shapes = {ins.name: ins.shape for ins in comps[name]}
        for ins in comps[name]:
            if _base(ins.opcode) in COLLECTIVES and not ins.opcode.endswith("-done"):
                kind, origin, measured = _origin(ins.rest)
                if origin == "psum" and _divided(comps[name], ins.name):
                    origin = "pmean"
                operands, nbytes = _operand_bytes(ins.operands, shapes, measured)
                reads = any(_varies(flow.value(name, op)) for op in ins.operands)
                found.append(Collective(_base(ins.opcode), ins.shape, operands, nbytes, times, origin, name,
                                        replica_groups.parse(ins.rest), kind, reads, (name, ins.name) in flow.needed,
                                        all(measured) if measured else None, ins.name, _dimensions(ins.rest),
                                        _reduction(ins, comps), any(op in computed[name] for op in ins.operands),
                                        None if results is None else tuple(k for k in range(results)
                                                                           if (name, ins.name) in flow.needed_by(k)),
                                        uniform.moves_nothing(name, ins)))
    return found


def idle_note(text: str, ops=COLLECTIVES) -> str:
    """"; the 2 more collective-permutes it runs carry nothing the answer needs ..." where the program runs idle
    collectives of these kinds, else "": a count of the needed ones ("runs 0 ppermutes") is not mistaken for
    what the program runs. Those that move only what every device already holds are said so."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    idle = [c for c in collectives(text) if c.op in ops and c.idle]
    return (_idle_part([c for c in idle if not c.moves_nothing], _NEEDS_NOTHING)
            + _idle_part([c for c in idle if c.moves_nothing], _MOVES_NOTHING))


# What an idle collective is, as idle_note says it: for one, and for several.
_NEEDS_NOTHING = ("carries nothing the answer needs (measured: the answer does not change without it, only tests it, "
                  "or stays the same with it taken from a run on other inputs), so it is",
                  "carry nothing the answer needs (measured: the answer does not change without them, only tests "
                  "them, or stays the same with them taken from a run on other inputs), so they are")
_MOVES_NOTHING = ("moves only values every device already holds (the same on all of them): it communicates nothing, "
                  "so it is", "move only values every device already holds (the same on all of them): they "
                                "communicate nothing, so they are")


def _idle_part(idle: list[Collective], said: tuple[str, str]) -> str:
    if not idle:
        return ""
    runs = sum(c.times or 1 for c in idle)
    kinds = " and ".join(dict.fromkeys(c.op for c in idle)) + ("s" if runs > 1 else "")
    return f"; the {runs} more {kinds} it runs {said[runs > 1]} not counted"


def select(text: str, ops=COLLECTIVES, by_student: bool = False) -> list[Collective]:
    """The collectives of the given opcode(s) that are not idle, only the program's own if ``by_student``."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    return [c for c in collectives(text) if c.op in ops and not c.idle and (c.by_student or not by_student)]


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


def dtypes(shape: str) -> set[str]:
    """The element types of an HLO type's arrays by NumPy's names, as a student knows them: "s32[4,10]{1,0}" ->
    {"int32"}, "pred[]" -> {"bool"}, a tuple's each."""
    return {_numpy_name(kind) for kind, _ in _ARRAY_RE.findall(shape)}


def _numpy_name(kind: str) -> str:
    """NumPy's name of an HLO element type: s32 -> int32, u8 -> uint8, f32 -> float32, pred -> bool."""
    if kind in ("pred", "bf16"):
        return {"pred": "bool", "bf16": "bfloat16"}[kind]
    prefix = {"s": "int", "u": "uint", "f": "float", "c": "complex"}.get(kind[0])
    return prefix + kind[1:] if prefix and kind[1:].isdigit() else kind


def _elements(shape: str) -> int:
    """The most elements of one array in an HLO type (a tuple's largest)."""
    sizes = []
    for _, dims in _ARRAY_RE.findall(shape):
        n = 1
        for d in dims.split(","):
            if d.strip():
                n *= int(d)
        sizes.append(n)
    return max(sizes, default=0)


# A dot's contracted dimensions of its left operand: as HLO prints them, or in the backend_config of the
# cuBLAS call grader.suite.hlo_platforms reads as the dot it replaced.
_CONTRACTING = re.compile(r'lhs_contracting_dims=\{([\d,\s]*)\}|"lhs_contracting_dimensions":\[([\d",\s]*)\]')
_DIM_LABELS = re.compile(r"dim_labels=\w+_(\w+)->")


def _dims(shape: str) -> list[int]:
    """The dimensions of an HLO array type (the first array of a tuple)."""
    found = _ARRAY_RE.search(shape)
    return [int(d) for d in found.group(2).split(",") if d.strip()] if found else []


def _applied(ins: _Instr, comps: dict) -> list[_Instr]:
    """The instructions of the computation ``ins`` applies to each element (its ``to_apply``), or none."""
    return next((comps.get(callee, []) for attr, callee in ins.calls if attr == "to_apply"), [])


def _reducer_operations(ins: _Instr, comps: dict) -> int:
    """The arithmetic instructions of the reducer a reduction applies at each element (at least one): a
    reduction of several inputs at once can compute a whole product in its reducer."""
    return max(1, sum(1 for i in _applied(ins, comps) if i.opcode not in NOT_WORK))


def _real_products(shape: str) -> int:
    """Real multiplies in one multiply of an HLO type's elements: four for a complex number (two real numbers packed
    in one, round 54: a complex product is four real ones, whatever the imaginary parts hold), else one."""
    return 4 if re.match(r"\(?c(64|128)\[", shape) else 1


def _operations(ins: _Instr, shapes: dict[str, str], comps: dict) -> int:
    """Arithmetic operations one run of ``ins`` performs: a dot's or a convolution's multiply-adds (two
    each: a product and a sum), a reduction's elements times its reducer's arithmetic, an elementwise
    instruction's results; any other its largest array."""
    out = _elements(ins.shape)
    if ins.opcode == "scatter" and ins.operands:  # each update combined by the computation it applies (none: set)
        return _elements(shapes.get(ins.operands[-1], "")) * sum(1 for i in _applied(ins, comps)
                                                                if i.opcode not in NOT_WORK)
    if ins.opcode == "map":  # its computation once per element: a whole product can be written as one
        return out * _reducer_operations(ins, comps)
    if ins.opcode in ("reduce", "reduce-window") and ins.operands:
        data = ins.operands[:max(1, len(ins.operands) // 2)]  # then as many initial values
        return max(_elements(shapes.get(op, "")) for op in data) * _reducer_operations(ins, comps)
    operands = [_dims(shapes.get(op, "")) for op in ins.operands[:2]]
    if ins.opcode == "dot" and operands and operands[0]:
        contracting = _CONTRACTING.search(ins.rest)  # none printed (a cuBLAS call without its config): a matmul's
        dims = [int(d) for d in re.findall(r"\d+", contracting.group(1) or contracting.group(2))] if contracting \
            else [len(operands[0]) - 1]
        size = 1
        for d in dims:
            size *= operands[0][d] if d < len(operands[0]) else 1
        return 2 * out * size * _real_products(ins.shape)
    if ins.opcode == "convolution" and len(operands) == 2 and operands[1]:
        labels = _DIM_LABELS.search(ins.rest)  # the kernel's output-feature dimension is "o"
        kernel = _elements(shapes.get(ins.operands[1], ""))
        if labels and "o" in labels.group(1) and len(labels.group(1)) == len(operands[1]):
            kernel //= max(1, operands[1][labels.group(1).index("o")])
        return 2 * out * kernel * _real_products(ins.shape)
    return max(out, *(_elements(shapes.get(op, "")) for op in ins.operands))


def operations(text: str, combining: bool = True) -> int | None:
    """The arithmetic operations one device performs over a run of the program: every arithmetic instruction
    it runs counted once per run (a loop's body once per iteration, every branch of a conditional), so a
    computation split into many small instructions counts as much as one large one; None if one is in a
    loop of unknown trip count. ``combining``: whether a reducing collective's part of the combining counts
    (:data:`_REDUCING`; grader.suite.work.outside_per_device leaves it out: it is the collective's, written
    neither inside nor outside the per-device code). Moving, slicing, padding, selecting and negating data are not arithmetic; comparing
    values computed from the inputs is (a maximum can be written as compares and selects).
    Nothing that runs is left out for what a reading of the data flow says of its values: a value that
    looks constant or zero to such a reading (a reduction whose reducer turns zeros into ones, a sign bit)
    can carry the whole computation, and what runs is what the device does.
    A device that computes on its own part of the data does about the reference program's work per
    device; one that computes the whole answer itself, at once or a slice at a time, about n times it."""
    def measure(comp, ins, shapes, comps, free):
        if (comp, ins.name) in free:
            return 0
        if ins.opcode in _REDUCING:
            return _reduced(ins, shapes, comps) if combining else 0
        return 0 if ins.opcode in NOT_WORK else _operations(ins, shapes, comps)

    done = _counted(text, measure)
    return None if done is None else round(done)


# Collectives that combine the devices' values: each device performs its part of the combining (an all-reduce or
# reduce-scatter over g devices adds (g - 1) / g of what it puts in), as a reduce-scatter written by hand (an
# all_to_all, then the blocks that arrive added up) does it in instructions of its own (round 61: the hand-written
# one counted, the reference's psum_scatter did not).
_REDUCING = frozenset({"all-reduce", "reduce-scatter", "all-reduce-start", "reduce-scatter-start"})


def _reduced(ins: _Instr, shapes: dict[str, str], comps: dict) -> float:
    """The arithmetic one device performs of what the reducing collective ``ins`` combines: (g - 1) / g of the
    elements it puts in, times its reducer's arithmetic, as a fraction (a psum of one number over 4 devices is 3/4;
    :func:`operations` rounds only its total, since rounding each collective would tilt a tiny case's few
    operations); 0 where the groups cannot be read."""
    groups = replica_groups.parse(ins.rest)
    size = max((len(g) for g in groups), default=0) if groups else 0
    if size < 2:
        return 0
    put_in = sum(_elements(shapes.get(op, "")) for op in ins.operands)
    return put_in * (size - 1) / size * _reducer_operations(ins, comps)


# What an instruction can compute from without any input of the program: the same value on every run.
_NO_INPUT = frozenset({"constant", *SAME_FOR_EVERY_INPUT})


def _callers_first(comps: dict[str, list[_Instr]], entry: str | None) -> list[str]:
    """The computations reachable from ENTRY, each after every computation that calls it."""
    seen: set[str] = set()
    order: list[str] = []

    def visit(name: str):
        if name in seen or name not in comps:
            return
        seen.add(name)
        for ins in comps[name]:
            for _, callee in ins.calls:
                visit(callee)
        order.append(name)

    if entry:
        visit(entry)
    return order[::-1]


def _input_free(comps: dict[str, list[_Instr]], entry: str | None) -> set[tuple[str, str]]:
    """(computation, instruction) of every instruction whose value depends on no input of the program: made of
    constants, iotas and the device's id only (a mask of the real elements, a device's offset, the index
    arithmetic XLA's partitioner adds where it splits such a value). What it computes is the same whatever the
    inputs, so it does none of the task's work, however it is written. A fused or called computation's
    parameter is input-free where every call passes an input-free operand; any other's counts as an input. A
    tuple's elements are followed one by one, into calls and a loop's body: an element of the carry that starts
    input-free and that the body writes back input-free (a fori_loop's counter, the index it wraps) stays so, in
    the body and in the loop's condition (round 52: a loop over the elements, its bookkeeping counted as the dot's
    work; round 55: the condition's compare of the counter). Stricter than
    grader.suite.hlo_flow's CONST level on purpose: that reading takes ``x * 0`` for a constant, and a value made
    of the inputs through such a reading (a reducer that turns zeros into ones) carries the whole computation;
    here a value that reads an input in any way is the inputs' work."""
    free_parameters: dict[str, set[int]] = {}
    # computation -> parameter number -> the free elements of that tuple parameter (a loop's carry, a call's tuple)
    free_parts: dict[str, dict[int, set[int]]] = {}
    loop_bodies: set[str] = set()
    conditions: dict[str, str] = {}  # a loop's condition -> its body, whose carry it reads
    found: set[tuple[str, str]] = set()

    def read(name: str, given: set[int], parts_in: dict[int, set[int]]) -> tuple[set[str], dict[str, set[int]]]:
        free: set[str] = set()
        parts: dict[str, set[int]] = {}  # a tuple value's free elements
        for ins in comps[name]:
            if ins.opcode == "parameter":
                number = parameter_number(ins.rest)
                if number in given:
                    free.add(ins.name)
                elif number in parts_in:
                    parts[ins.name] = parts_in[number]
            elif ins.opcode == "get-tuple-element" and ins.operands and ins.operands[0] in parts:
                if tuple_index(ins.rest) in parts[ins.operands[0]]:
                    free.add(ins.name)
            elif ins.opcode in _NO_INPUT or (ins.operands and all(op in free for op in ins.operands)) \
                    or (not ins.operands and ins.opcode in ("fusion", "call")):  # made inside of constants alone
                free.add(ins.name)  # (round 45: einsum's vector of ones, a fusion of no operands)
            elif ins.opcode == "tuple":
                parts[ins.name] = {k for k, op in enumerate(ins.operands) if op in free}
        return free, parts

    done: set[str] = set()
    for name in _callers_first(comps, entry):
        given, parts_in = free_parameters.get(name, set()), free_parts.get(name, {})
        if conditions.get(name) in done:  # the carry's elements its body keeps free (a fori_loop's counter)
            parts_in = {0: parts_in.get(0, set()) & free_parts.get(conditions[name], {}).get(0, set())}
        free, parts = read(name, given, parts_in)
        while name in loop_bodies and parts_in.get(0):  # an element stays free where the body writes it back so
            root = comps[name][-1]  # XLA prints the ROOT last
            back = {k for k, op in enumerate(root.operands) if op in free} if root.opcode == "tuple" else set()
            if parts_in[0] <= back:
                break
            parts_in = free_parts[name] = {0: parts_in[0] & back}
            free, parts = read(name, given, parts_in)
        for ins in comps[name]:
            for attr, callee in ins.calls:
                if ins.opcode == "while" and attr in ("body", "condition"):  # the carry's elements free on entry
                    if attr == "body":  # (a counter from 0)
                        loop_bodies.add(callee)
                    else:
                        conditions[callee] = next((c for a, c in ins.calls if a == "body"), "")
                    passed, passed_parts = set(), {0: parts.get(ins.operands[0], set())} if ins.operands else {}
                elif attr == "calls" or ins.opcode == "call":
                    passed = {i for i, op in enumerate(ins.operands) if op in free}
                    passed_parts = {i: parts[op] for i, op in enumerate(ins.operands) if op in parts}
                else:
                    passed, passed_parts = set(), {}
                free_parameters[callee] = free_parameters.get(callee, passed) & passed
                earlier = free_parts.get(callee, passed_parts)
                free_parts[callee] = {i: earlier[i] & passed_parts[i] for i in earlier.keys() & passed_parts.keys()}
        found |= {(name, n) for n in free}
        done.add(name)
    return found


def _product(comp: str, ins: _Instr, shapes: dict[str, str], comps: dict, free: set[tuple[str, str]]) -> int:
    """The arithmetic of ``ins`` as a product, counted as :func:`operations` counts a dot (two per multiply-add):
    a dot's or a convolution's, an elementwise multiply or divide of two values computed from the inputs (a
    product written as a multiply and a sum: its multiplies and the adds after them), and a reduction's or a
    map's whose computation multiplies two of the values it is given (a variadic reduce can compute a product
    in its reducer), once per element; 0 for anything else. A multiply by a constant, a mask or a device's
    offset (:func:`_input_free`) is no product."""
    if (comp, ins.name) in free:
        return 0
    if ins.opcode in ("dot", "convolution"):  # by a constant matrix (a permutation, round 45): a move, no product
        return _operations(ins, shapes, comps) if all((comp, o) not in free for o in ins.operands) else 0
    if ins.opcode in ("multiply", "divide") and len(ins.operands) == 2 \
            and all((comp, o) not in free for o in ins.operands):  # a / b multiplies a by b's reciprocal
        return 2 * _elements(ins.shape) * _real_products(ins.shape)
    if ins.opcode in _PER_ELEMENT and ins.operands:  # a reducer or a map's body multiplying what it is given
        applied = _applied(ins, comps)
        kinds = {i.name: i.opcode for i in applied}
        multiplies = sum(1 for i in applied if i.opcode == "multiply"
                         and all(kinds.get(o) not in ("constant", None) for o in i.operands))
        data = ins.operands[:max(1, len(ins.operands) // 2)] if ins.opcode != "map" else ins.operands
        return 2 * multiplies * max([_elements(ins.shape), *(_elements(shapes.get(o, "")) for o in data)])
    return 0


# What a loop fusion may hold for XLA to compute it one output element at a time (anything that reduces, contracts
# or applies a computation of its own is computed as a whole).
_WHOLE_AT_ONCE = frozenset({"reduce", "reduce-window", "dot", "convolution", "scatter", "map", "sort",
                            "select-and-scatter", "fusion", "call", "while", "conditional", "custom-call"})


def _loop_fusions(comps: dict[str, list[_Instr]]) -> dict[str, int]:
    """The computations of loop fusions (``kind=kLoop``) of elementwise work, with the elements of their output:
    XLA computes such a fusion one output element at a time, so a product or a sum of which the fusion keeps a
    slice costs that slice (XLA may copy an elementwise step into each of several such fusions, one per slice)."""
    found: dict[str, int] = {}
    for instrs in comps.values():
        for ins in instrs:
            if ins.opcode == "fusion" and "kind=kLoop" in ins.rest:
                callee = next((c for attr, c in ins.calls if attr == "calls" and c in comps), None)
                if callee and not any(_base(i.opcode) in _WHOLE_AT_ONCE or _base(i.opcode) in COLLECTIVES
                                      for i in comps[callee]):
                    found[callee] = max(found.get(callee, 0), _elements(ins.shape))
    return found


def _per_output(loops: dict[str, int], comp: str, ins: _Instr, done: int) -> int:
    """``done``, an instruction's count, as a loop fusion runs it (:func:`_loop_fusions`): for no more elements than
    the fusion outputs (a value it broadcasts is still counted once per element of its own, as it is written)."""
    if comp not in loops or not done:
        return done
    return min(done, max(1, done // max(1, _elements(ins.shape))) * loops[comp])


def products(text: str) -> int | None:
    """The arithmetic of the products (:func:`_product`) one device performs over a run of the program: a device
    that multiplies each block it needs once runs the reference's products; one that multiplies a block again
    (copies of a product, scaled apart so that XLA keeps them) runs more. None if one is in a loop of unknown
    trip count."""
    return _counted(text, _product)


def _counted(text: str, measure) -> int | None:
    """The sum over the instructions one device runs of ``measure(computation, instruction, shapes, comps, free)``
    (``free``: :func:`_input_free`'s), each once per run of its computation."""
    comps, entry, flow = _program(text)
    runs, (free, _, loops) = _runs(comps, entry), _inputs_read(text)
    total = 0
    for name in flow.reachable:
        shapes = {ins.name: ins.shape for ins in comps[name]}
        for ins in comps[name]:
            done = _per_output(loops, name, ins, measure(name, ins, shapes, comps, free))
            if not done:
                continue
            if runs.get(name) is None:
                return None
            total += done * runs[name]
    return total


def largest_product(text: str) -> int:
    """The most arithmetic one product (:func:`_product`) of the compiled program performs: a schedule that
    multiplies one block at a time runs no product larger than one block's, however many it runs."""
    comps, _, flow = _program(text)
    free, _, loops = _inputs_read(text)
    found = 0
    for name in flow.reachable:
        shapes = {ins.name: ins.shape for ins in comps[name]}
        found = max([found, *(_per_output(loops, name, ins, _product(name, ins, shapes, comps, free))
                              for ins in comps[name])])
    return found


def _product_size(comp: str, ins: _Instr, comps: dict, shapes: dict[str, str], free: set[tuple[str, str]],
                  loops: dict[str, int], depth: int = 8) -> int:
    """The largest product (:func:`_product`) an instruction runs: itself, or one in a computation it calls (a
    fusion of a dot with what uses it, a loop of products), counted as :func:`largest_product` counts it (in a
    loop fusion, for no more elements than it outputs)."""
    found = _per_output(loops, comp, ins, _product(comp, ins, shapes, comps, free))
    for attr, callee in ins.calls:
        if depth and attr != "to_apply" and callee in comps:
            inner = {i.name: i.shape for i in comps[callee]}
            found = max([found, *(_product_size(callee, i, comps, inner, free, loops, depth - 1)
                                  for i in comps[callee])])
    return found


def _matching(pairs: dict) -> set:
    """The left ends of a largest set of pairs of a bipartite graph (left -> the right ends it may take) with no end
    used twice."""
    taken: dict = {}

    def place(left: str, seen: set[str]) -> bool:
        for right in pairs[left]:
            if right not in seen:
                seen.add(right)
                if right not in taken or place(taken[right], seen):
                    taken[right] = left
                    return True
        return False

    for left in pairs:
        place(left, set())
    return set(taken.values())


# Instructions that only move the data of some of their operands (by place: None, all of them): what they give is
# those operands' data. Index operands (a dynamic slice's offsets) carry no data.
_MOVES = {"bitcast": (0,), "reshape": (0,), "copy": (0,), "copy-start": (0,), "copy-done": (0,), "transpose": (0,),
          "slice": (0,), "dynamic-slice": (0,), "dynamic-update-slice": (0, 1), "pad": (0,), "reverse": (0,),
          "broadcast": (0,), "convert": (0,), "bitcast-convert": (0,), "concatenate": None}


class _Origins:
    """Where the data of a value comes from: the instructions that computed or brought it, followed back through
    instructions that only move, slice, join, convert or scale data (by a value no input decides, or negated),
    through tuples, barriers and fusions that only do that, and to the element of a tuple it is (a loop's carry:
    each element its own origin). Values made only of constants, iotas and the device's id carry no data
    (:func:`_input_free`)."""

    def __init__(self, comps: dict[str, list[_Instr]], free: set[tuple[str, str]]):
        self.comps, self.free = comps, free
        self.named = {name: {ins.name: ins for ins in instrs} for name, instrs in comps.items()}
        self.memo: dict[tuple, frozenset] = {}

    def of(self, comp: str, name: str, index: int | None = None) -> frozenset:
        key = (comp, name, index)
        if key not in self.memo:
            self.memo[key] = frozenset()  # HLO has no cycles within a computation; a fusion never calls itself
            self.memo[key] = self._traced(comp, self.named[comp].get(name), index)
        return self.memo[key]

    def _traced(self, comp: str, ins: _Instr | None, index: int | None) -> frozenset:
        if ins is None or (comp, ins.name) in self.free:
            return frozenset()
        op, operands = ins.opcode, [o for o in ins.operands if o in self.named[comp]]
        if op == "get-tuple-element" and operands:
            return self.of(comp, operands[0], tuple_index(ins.rest))
        if op == "tuple" and index is not None and index < len(operands):
            return self.of(comp, operands[index])
        if op == "opt-barrier" and operands:
            return self.of(comp, operands[0], index)
        if op in _MOVES and index is None:
            places = _MOVES[op] or range(len(operands))
            return frozenset().union(*(self.of(comp, operands[k]) for k in places if k < len(operands)))
        data = [k for k, o in enumerate(operands) if (comp, o) not in self.free]
        if index is None and (op == "negate" or op in ("multiply", "divide") and data == [0] or op == "multiply"
                              and data == [1]):  # scaled by what no input decides (round 45: lr / n before sending)
            return self.of(comp, operands[data[0]])
        fused = next((c for attr, c in ins.calls if attr == "calls" and c in self.comps), None)
        if op == "fusion" and index is None and fused and self.comps[fused]:
            inside = self.of(fused, self.comps[fused][-1].name)
            parameters = {i.name: parameter_number(i.rest) for i in self.comps[fused] if i.opcode == "parameter"}
            if all(c == fused and n in parameters for c, n, _ in inside):
                return frozenset().union(*(self.of(comp, operands[parameters[n]]) for _, n, _ in inside
                                           if parameters[n] < len(operands)))
        return frozenset({(comp, ins.name, index)})

    def read(self, comp: str, ins: _Instr) -> frozenset:
        """Where the data an instruction reads comes from: its operands'."""
        return frozenset().union(*(self.of(comp, o) for o in ins.operands if o in self.named[comp]))


def overlapped(text: str, smallest: int) -> int | None:
    """How many executions of the program's ppermutes (collective-permutes the answer needs) each have a product
    of at least ``smallest`` operations (:func:`largest_product`'s count) that can run while it is in flight, a
    different product for each (but sends of the same data to other targets, a ring both ways starting with its own
    block sent either way, share one), one the answer can depend on (grader.suite.hlo_flow: not one multiplied by zero):
    in the same computation, neither one's result reaching the other, read from the
    data flow of the compiled program, which no scheduling can undo; and a product of the block that step sends
    (its data comes from where the ppermute's does, :class:`_Origins`): the schedule the task teaches multiplies
    the block it holds while it passes it on. A ring that multiplies each block while it travels on overlaps
    every step, in one direction or both, its halves multiplied apart or joined; one that gathers every block
    before any product (an optimization_barrier over what arrived, products after the ring) overlaps none, and
    neither does a ring in two chains, each gathered behind its own barrier: the one chain's products, run beside
    the other chain's steps, multiply none of what those steps send. None where a ppermute is in a loop of
    unknown length."""
    comps, entry, flow = _program(text)
    runs, found = _runs(comps, entry), collectives(text)
    idle = {(c.computation, c.instruction) for c in found if c.idle}
    free, _, loops = _inputs_read(text)
    origins = _Origins(comps, free)
    total = 0
    for name in flow.reachable:
        instrs = comps[name]
        sends = [i.name for i in instrs if _base(i.opcode) == "collective-permute" and not i.opcode.endswith("-done")
                 and (name, i.name) not in idle]
        if not sends:
            continue
        if runs.get(name) is None:
            return None
        shapes = {ins.name: ins.shape for ins in instrs}
        before: dict[str, set[str]] = {}
        for ins in instrs:  # printed in an order where every operand comes before its users
            before[ins.name] = set().union(*(before.get(op, set()) | {op} for op in ins.operands if op in shapes))
        products = [i.name for i in instrs if _product_size(name, i, comps, shapes, free, loops) >= smallest
                    and (name, i.name) in flow.needed]  # a decoy the answer cannot depend on (times 0) overlaps nothing
        named = {ins.name: ins for ins in instrs}
        sent = {s: origins.of(name, named[s].operands[0]) if named[s].operands else frozenset() for s in sends}
        read = {p: origins.read(name, named[p]) for p in products}
        # sends of the same data in other directions (a ring both ways starts with its own block sent either way) are
        # one step's block on its ways: a product of it runs beside each of them (round 54)
        ways: dict[frozenset, list[str]] = {}
        for s in sends:
            ways.setdefault(sent[s], []).append(s)
        pairs = {data: [p for p in products if all(p != s and s not in before[p] and p not in before[s]
                                                   for s in alike) and data & read[p]] for data, alike in ways.items()}
        taken = _matching(pairs)
        total += sum(len({replica_groups.parse(named[s].rest) for s in ways[data]}) for data in taken) * runs[name]
    return total


def sends_products(text: str, op: str) -> bool:
    """Whether every ``op`` collective the answer needs (of the program's own) sends data a product computed (a dot,
    a convolution or a fusion holding one, followed back through moves by :class:`_Origins`): an all_to_all that
    passes on partial sums (a reduce-scatter by hand) does; one that passes on blocks of the inputs (a gather by
    another name, round 41) does not."""
    comps, entry, flow = _program(text)
    free, _, loops = _inputs_read(text)
    origins = _Origins(comps, free)
    chosen = {(c.computation, c.instruction) for c in select(text, op, by_student=True)}
    if not chosen:
        return False
    for comp, name in chosen:
        named = {ins.name: ins for ins in comps[comp]}
        ins = named.get(name)
        if ins is None or not ins.operands:
            return False
        shapes = {i.name: i.shape for i in comps[comp]}
        came = origins.read(comp, ins)
        if not came or not all(c == comp and n in named and _product_size(comp, named[n], comps, shapes, free, loops)
                               for c, n, _ in came):
            return False
    return True


# What a reduce-scatter by hand may do with the blocks an all_to_all brought: move them (and their elements apart
# from the indices they are moved by), add them up, scale them by what no input decides, and add other values to
# them. Every value it makes stays a sum of what arrived; a product of two of them needs anything else.
_ADDS = frozenset({"add", "subtract", "negate", "all-to-all", "all-gather", "collective-permute"})
_SCALES = frozenset({"multiply", "dot", "convolution"})  # by a value no input decides: one operand of the sum only
_CALLS_DATA = frozenset({"fusion", "call", "conditional", "while"})
_SUMS = frozenset({"parameter", "add", "tuple", "get-tuple-element", "constant", "copy", "bitcast", "convert"})
_WHOLE = None  # a reached value's part: all of it (else the index of a tuple's element)


def _linear(comp: str, ins: _Instr, places: list[int], comps: dict, free: set[tuple[str, str]]) -> bool:
    """Whether ``ins`` gives a sum of what it reads at operand ``places`` (the values reached from a collective),
    with the rest fixed: a move of their data, an addition, a scaling by an input-free value, a sum (a reduction
    or a collective that adds), or a call whose computations are read in turn (a conditional's predicate aside)."""
    op = _base(ins.opcode)
    others = [o for k, o in enumerate(ins.operands) if k not in places]
    if op in _MOVES:
        data = _MOVES[op] or range(len(ins.operands))
        return all(k in data for k in places)
    if op in _ADDS or op in ("tuple", "get-tuple-element", "opt-barrier") \
            or (op in _CALLS_DATA and not (op == "conditional" and 0 in places)):
        return True
    if op in _SCALES or op == "divide":
        return len(places) == 1 and (op != "divide" or places == [0]) and all((comp, o) in free for o in others)
    if op in ("reduce", "all-reduce", "reduce-scatter"):
        # a sum: a reducer that only adds (round 45: a variadic reduce's reducer multiplied before its last add)
        data = range(max(1, len(ins.operands) // 2)) if op == "reduce" else range(len(ins.operands))
        reducer = _applied(ins, comps)
        return (all(k in data for k in places) and any(i.opcode == "add" for i in reducer)
                and all(i.opcode in _SUMS for i in reducer))
    return False


class _Reach:
    """The values reached from some instructions, forwards, across computations: by (computation, instruction),
    the parts reached (_WHOLE, or tuple elements by index, so a loop's counter beside a reached carry is not)."""

    def __init__(self, comps: dict[str, list[_Instr]], start: set[tuple[str, str]]):
        self.comps = comps
        self.parts: dict[tuple[str, str], set] = {key: {_WHOLE} for key in start}
        self.grown = True
        self.callers: dict[str, list[tuple[str, _Instr]]] = {}
        for comp, instrs in comps.items():
            for ins in instrs:
                for attr, callee in ins.calls:
                    if _base(ins.opcode) in _CALLS_DATA and (attr != "to_apply" or ins.opcode == "call"):
                        self.callers.setdefault(callee, []).append((comp, ins))

    def of(self, comp: str, name: str) -> set:
        return self.parts.get((comp, name), set())

    def add(self, comp: str, name: str, parts: set) -> None:
        have = self.parts.setdefault((comp, name), set())
        if not parts <= have:
            have |= parts
            self.grown = True

    def read(self, comp: str, ins: _Instr) -> list[int]:
        """The operand places of ``ins`` that read a reached value (a tuple's element: only where it is reached)."""
        if ins.opcode == "get-tuple-element" and ins.operands:
            parts = self.of(comp, ins.operands[0])
            return [0] if _WHOLE in parts or tuple_index(ins.rest) in parts else []
        return [k for k, o in enumerate(ins.operands) if self.of(comp, o)]

    def step(self, comp: str, ins: _Instr, places: list[int]) -> None:
        """Mark what ``ins`` gives, and what the computations it calls are given, as reached."""
        op = _base(ins.opcode)
        if op == "tuple":
            self.add(comp, ins.name, set(places))
        elif op in ("opt-barrier", "while"):
            self.add(comp, ins.name, self.of(comp, ins.operands[0]))
        elif op not in ("fusion", "call", "conditional"):
            self.add(comp, ins.name, {_WHOLE})
        for _, callee in ins.calls if op in _CALLS_DATA else ():
            given = {parameter_number(i.rest): i.name for i in self.comps.get(callee, []) if i.opcode == "parameter"}
            for k in places:
                target = given.get(k if op in ("fusion", "call") else 0)  # a branch's or a loop's one parameter
                if target and (op != "conditional" or k):
                    self.add(callee, target, self.of(comp, ins.operands[k]))

    def returned(self, comp: str) -> None:
        """A computation whose result is reached: its callers give it (a loop's body: to its next round too)."""
        root = self.comps[comp][-1]
        parts = self.of(comp, root.name)
        if not parts:
            return
        for caller_comp, caller in self.callers.get(comp, []):
            self.add(caller_comp, caller.name, parts)
            if caller.opcode == "while":
                for i in self.comps[comp]:
                    if i.opcode == "parameter":
                        self.add(comp, i.name, parts)


def sums_what_arrives(text: str, op: str) -> bool:
    """Whether what every ``op`` collective of the program's own returns is only summed, wherever it goes: into
    fusions, calls, branches and loops and out of them into their callers, to the program's outputs
    (:func:`_linear`). A reduce-scatter by hand adds up the partial sums that arrive; a gather by an all_to_all
    must multiply what it brought (round 42: after blocks multiplied by one so that it sent "products"; round 43:
    the all_to_all in a branch, the product after it; a product made of exp and log is no sum either)."""
    comps, _, _ = _program(text)
    free, _, _ = _inputs_read(text)
    reach = _Reach(comps, {(c.computation, c.instruction) for c in select(text, op, by_student=True)})
    while reach.grown:
        reach.grown = False
        for comp, instrs in comps.items():
            for ins in instrs:
                places = reach.read(comp, ins)
                if places:
                    if not _linear(comp, ins, places, comps, free):
                        return False
                    reach.step(comp, ins, places)
            if instrs:
                reach.returned(comp)
    return True


def in_words(done: int | None) -> str:
    """An :func:`operations` figure in words: "45 arithmetic operations", or, for a loop the compiler cannot
    count, that and how to make it countable (the checks that use it cannot bound such work, so they fail it)."""
    if done is None:
        return ("an uncounted number of arithmetic operations (in a loop whose length the compiler cannot tell, a "
                "lax.while_loop; lax.fori_loop with fixed bounds or a Python for loop can be counted)")
    return f"{done} arithmetic operations"


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
