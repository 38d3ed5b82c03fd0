"""How a wrong value differs from the reference: the relation that holds on every entry, or where it differs.

A student reads "wrong at 7 of 8 entries" and starts guessing. This module measures instead. Given the
student's value and the reference's on the test's inputs, it looks for a relation that holds on every
entry: a constant factor (and which count of the task it equals: the devices, a mesh axis, the rows),
a transpose, a constant offset, equal blocks of the result in another order (whose block landed
where). Given the reference as a function, how the inputs split into blocks and a way to run the
student's function again (a :class:`Probe`; the suite hands one over, and it runs only after a
failure), it runs both on inputs with one block non-zero at a time, where the task is additive in that
input, and reads from the numbers whose contribution is missing, counted twice, scaled, or lands in
another block. A relation is said only if it holds on every entry; when none does, the sentence says
where the values differ (which blocks are right and which are not) and claims no cause.

Every sentence is a fact about this run; the cause behind a fact is the suite's to add (``causes`` in
:func:`grader.suite.checks.expect_close`). Nothing here runs student code: ``Probe.rerun`` is the
suite's call into the student's worker.
"""

from __future__ import annotations

import functools
import re

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from grader.layout import plural
from grader.suite import dependence
from grader.suite.feedback import ranges
from grader.suite.value_patterns import close, entries_that_tell, factor

MAX_PAIRS = 4  # pairs of blocks a sentence lists before it says "..."
CLOSE = 1e-2  # a factor within 1 % of 1 is a small error (an epsilon, a lower precision), not a factor to name


@dataclass(frozen=True)
class Split:
    """Input number ``arg`` of the call is split along ``axis`` into ``parts`` blocks (the last may be short),
    block j belonging to ``owner`` j ("device": device j; "'model' device": the j-th along mesh axis
    'model'); ``name`` is the input's name in the statement. ``chunks`` > 1: each owner's block is cut into
    that many chunks, piece j being chunk j % chunks of owner j // chunks's block (a reduce-scatter's pieces)."""

    arg: int
    axis: int
    parts: int
    name: str
    owner: str = "device"
    chunks: int = 1

    def block(self, j: int) -> str:
        if self.chunks > 1:
            owner = j // self.chunks
            return f"chunk {j % self.chunks} of {self.name}'s block {owner} ({self.owner} {owner}'s)"
        return f"{self.name}'s block {j} ({self.owner} {j}'s)"


@dataclass(frozen=True)
class Probe:
    """What the engine needs to separate causes: ``reference(*inputs)`` (NumPy, float64) is the answer;
    ``splits`` say how inputs split into blocks; ``rerun(*inputs)`` runs the student's function on other
    inputs (a ``student.call``, made only after a failure); ``out`` (``arg`` unused) says how the result
    splits, one block per owner, where it does. ``student.program`` fills in ``reference`` (its
    ``expect``) and ``inputs`` (the test's) itself."""

    reference: Callable | None = None
    inputs: tuple = ()
    splits: tuple[Split, ...] = ()
    rerun: Callable | None = None
    out: Split | None = None
    counts: dict = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the inputs' names in the statement, for a sentence about one of them

    def name(self, k: int) -> str | None:
        """Input k's name: given, or its split's."""
        return self.names[k] if k < len(self.names) else next((s.name for s in self.splits if s.arg == k), None)

    @classmethod
    def per_device(cls, reference: Callable, x, rerun: Callable, name: str = "x") -> Probe:
        """A per-device function run on ``x``, row i on device i, and returning one row per device."""
        n = len(x)
        return cls(reference=reference, inputs=(x,), splits=(Split(0, 0, n, name),), out=Split(0, 0, n, "the result"),
                   rerun=rerun, counts={"devices": n})


def _tiny(a, atol: float) -> bool:
    return not np.abs(np.asarray(a, np.float64)).max(initial=0) > atol


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-3 * max(1.0, abs(b))


def _counted(value: float, counts: dict) -> tuple[int, str] | None:
    """(n, "the number of devices and of rows") where ``value`` is n, a count of the task, or None."""
    names = [name for name, n in counts.items() if n > 1 and _near(value, n)]
    return (counts[names[0]], f"{counts[names[0]]} is the number of {' and of '.join(names)}") if names else None


_TWO_AXES = re.compile(r"is the number of [^()]*?along '[^']+'[^()]*? and of [^()]*?along '")


def ambiguous(message: str) -> bool:
    """Whether a sentence names a factor that is the size of two mesh axes at once (a 2 x 2 mesh): true, but it
    cannot say which of the two axes the mistake is about."""
    return bool(_TWO_AXES.search(message))


def named_factor(c: float, counts: dict, of: str = "the answer", lengths: dict | None = None) -> str:
    """"4 times the answer" / "1/4 of the answer", and which of the task's ``counts`` (name -> number) 4 is; else
    "2/7 of the answer" where it is one count over another, ``lengths`` (the inputs' axes) counted too."""
    for value, form in ((c, "{n} times"), (1 / c if c else 0.0, "1/{n} of")):
        counted = _counted(value, counts)
        if counted:
            return f"{form.format(n=counted[0])} {of} ({counted[1]})"
    if _near(c, -1.0):
        return f"{of} with its sign flipped"
    ratio = _ratio(c, {**counts, **(lengths or {})})
    return f"{ratio[0]} {of} ({ratio[1]})" if ratio else f"{c:.4g} times {of}"


# A factor named as the device count by named_factor: "2 times the answer (2 is the number of devices)".
_DEVICES_NAMED = re.compile(r"(?:(?P<times>\d+) times|1/(?P<over>\d+) of) (?P<of>[^()]+?) \((?P<n>\d+) is the number of "
                            r"devices\)")


def _value(text: str) -> float:
    top, _, bottom = text.partition("/")
    return float(top) / float(bottom) if bottom else float(top)


def device_count_disproved(message: str, devices: int | None, others: dict) -> str:
    """``message``, a case's on ``devices``, without its naming of a factor as the number of devices where the same
    test on another count (``others``: device count -> message) measured the same factor of the same thing: a
    constant of the code that equals the count here (a stray / 2 on 2 devices, round 49), which the other count
    tells apart; else ``message`` as it is."""
    named = _DEVICES_NAMED.search(message)
    if not named or devices is None or int(named["n"]) != devices:
        return message
    value = int(named["times"]) if named["times"] else 1 / int(named["over"])
    for count, text in sorted(others.items()):
        same = [m for m in re.finditer(rf"(\d+(?:\.\d+)?(?:/\d+)?) (?:times|of) {re.escape(named['of'])}", text)
                if count != devices and _near(_value(m[1]), value)]
        if same:
            return message.replace(f"({devices} is the number of devices)",
                                   f"(the same on {plural(count, 'device')}: a factor of the code, not the device "
                                   "count)")
    return message


def _ratio(c: float, counts: dict) -> tuple[str, str] | None:
    """("2/7 of", "2 is the number of devices, 7 the length of x's axis 1") where c is one count of the task over
    another (a division by the wrong count), else None."""
    named: dict[int, str] = {}
    for name, n in counts.items():  # each count once, with all its names in the order given
        if n > 1:
            named[n] = name if n not in named else f"{named[n]} and of {name}"
    for p, q in ((p, q) for p in named for q in named if p < q):
        if _near(c, p / q):
            return f"{p}/{q} of", f"{p} is the number of {named[p]}, {q} the number of {named[q]}"
        if _near(c, q / p):
            return f"{q}/{p} times", f"{q} is the number of {named[q]}, {p} the number of {named[p]}"
    return None


def shape_relation(got_shape, expected_shape, counts: dict) -> str | None:
    """How a wrong shape's axes compare with the answer's, where each differing axis is off by a count of the
    task: "axis 1 is 2 times as long as the answer's (2 is the number of devices along 'model')"."""
    got_shape, expected_shape = tuple(got_shape), tuple(expected_shape)
    if len(got_shape) != len(expected_shape) or got_shape == expected_shape or 0 in got_shape + expected_shape:
        return None
    said = []
    for axis, (g, e) in enumerate(zip(got_shape, expected_shape)):
        if g == e:
            continue
        longer, counted = g > e, _counted(max(g, e) / min(g, e), counts)
        if counted is None:
            return None
        n, which = counted
        said.append(f"axis {axis} is {f'{n} times' if longer else f'1/{n}'} as long as the answer's ({which})")
    return "; ".join(said)


_GUESS = " (check "


def guess(where: str) -> str:
    """Where to look, said after a measured fact when nothing measured says which of several places it is:
    a measured difference replaces it (:func:`without_guess`)."""
    return f"{_GUESS}{where.removeprefix('check ')})"


def without_guess(message: str) -> str:
    """``message`` without the :func:`guess` it ends with, if any: for a message that a measured difference
    completes."""
    at = message.rfind(_GUESS)
    return message[:at] if at >= 0 and message.endswith(")") else message


def restacked(got, expected) -> str | None:
    """Where ``got`` is ``expected`` with whole blocks moved, what it says, else None: its k blocks along one
    axis placed side by side along another ((2, 6) for (4, 3)), or k copies of it one after another along
    an axis (a result whole on every device laid out as if split)."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.ndim != expected.ndim or got.shape == expected.shape or not got.size or not expected.size or \
            entries_that_tell(expected, 1e-5) < 2:  # blocks of zeros look moved whatever was done
        return None
    matches = functools.partial(np.allclose, got, rtol=1e-4, atol=1e-5, equal_nan=True)
    for b in range(got.ndim):
        k = got.shape[b] // expected.shape[b]
        others = [i for i in range(got.ndim) if i != b]
        if k >= 2 and got.shape[b] == k * expected.shape[b]:
            copies = np.concatenate([expected] * k, axis=b)
            if all(got.shape[i] == expected.shape[i] for i in others) and matches(copies):
                return (f"it is the answer {k} times over, one copy after another along axis {b}: a result that is "
                        f"whole on each of {plural(k, 'device')}, laid out as if split over them" +
                        guess(f"check the out_specs, PartitionSpec or concatenation that names a mesh axis for axis {b}"))
            for a in others:
                same = all(got.shape[i] == expected.shape[i] for i in others if i != a)
                if same and got.shape[a] * k == expected.shape[a] and \
                        matches(np.concatenate(np.split(expected, k, axis=a), axis=b)):
                    return (f"it holds the answer's {k} blocks of {_axis_word(got.ndim, a)} side by side along axis "
                            f"{b} instead of along axis {a}: each block is right, on the wrong axis" +
                            guess("check which dimension your out_specs, PartitionSpec, concatenation or a collective's "
                                  "dimension (scatter_dimension, axis) gives the mesh axis"))
    return None


def _bounds(length: int, parts: int) -> list[tuple[int, int]]:
    size = -(-length // parts)
    return [(min(j * size, length), min((j + 1) * size, length)) for j in range(parts)]


def _blocks(a: np.ndarray, axis: int, parts: int) -> list[np.ndarray]:
    return [np.take(a, range(lo, hi), axis=axis) for lo, hi in _bounds(a.shape[axis], parts)]


def _axis_word(ndim: int, axis: int) -> str:
    return {0: "rows", 1: "columns"}.get(axis, f"entries along axis {axis}") if ndim >= 2 else "entries"


def _span(lo: int, hi: int) -> str:
    return f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}"


def _permutation(got, expected, parts: int, rtol, atol) -> tuple[int, dict[int, int]] | None:
    """(axis, {b: p}) where block b of got holds block p of expected, p != b for some b."""
    for axis in range(got.ndim):
        if got.shape[axis] % parts or got.shape[axis] < parts:
            continue
        mine, theirs = _blocks(got, axis, parts), _blocks(expected, axis, parts)
        if len({np.round(t, 6).tobytes() for t in theirs}) < parts:
            continue  # equal blocks: whose is whose cannot be told
        where = {}
        for b, block in enumerate(mine):
            p = next((p for p, t in enumerate(theirs) if close(block, t, rtol, atol)), None)
            if p is None:
                break
            where[b] = p
        else:
            if any(b != p for b, p in where.items()):
                return axis, where
    return None


def _pairs_text(pairs: list[str]) -> str:
    shown = pairs[:MAX_PAIRS]
    return "; ".join(shown) + ("; ..." if len(pairs) > MAX_PAIRS else "")


def _change(got, expected, starts: tuple, counts: dict, rtol, atol) -> str | None:
    """got - s == c (expected - s) for an input s of the same shape (the parameters a step starts from)."""
    for k, start in enumerate(starts):
        start = np.asarray(start, np.float64) if np.shape(start) == got.shape else None
        if start is None or entries_that_tell(expected - start, atol) < 2:
            continue
        c = factor(got - start, expected - start, rtol, atol)
        if c is not None and abs(c) <= CLOSE:  # "0 times the change": nothing was done to it
            return f"returns argument {k} unchanged at every entry, where the answer changes it"
        if c is not None and abs(c - 1) > CLOSE:
            return f"changes argument {k} by {named_factor(c, counts, 'the change the answer makes')} at every entry"
    return None


def relation(got, expected, *, counts: dict | None = None, starts: tuple = (), rtol: float = 1e-4,
             atol: float = 1e-5, lengths: dict | None = None) -> str | None:
    """A relation between ``got`` and ``expected`` (same shape, not close) that holds on every entry, as
    the end of a sentence about the call ("is 2 times the answer (2 is the number of devices)"), or None.
    ``starts``: the call's inputs, for a result that is one of them changed (a training step's parameters)."""
    counts = counts or {}
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or not np.isfinite(got).all():
        return None
    c = factor(got, expected, rtol, atol)
    if c is not None and entries_that_tell(expected, atol) >= 2 and abs(c) <= CLOSE:
        return "is 0 at every entry, where the answer is not"
    if c is not None and entries_that_tell(expected, atol) >= 2 and abs(c - 1) > CLOSE:
        return f"is {named_factor(c, counts, lengths=lengths)} at every entry"
    if c is not None and c and (_counted(c, counts) or _counted(1 / c, counts)):
        return f"is {named_factor(c, counts)}"  # one value: said only when the factor is a count of the task
    changed = _change(got, expected, starts, counts, rtol, atol)
    if changed:
        return changed
    if got.ndim == 2 and got.shape[0] == got.shape[1] > 1 and close(got, expected.T, rtol, atol):
        return "is the answer transposed: entry (i, j) holds what (j, i) should"
    clipped = _clipped(got, expected, rtol, atol)
    if clipped:
        return clipped
    offset = got - expected
    if got.size >= 2 and entries_that_tell(expected, atol) >= 2 and np.allclose(offset, offset.flat[0], rtol=0,
                                                                        atol=atol + rtol * np.abs(expected).max()):
        c = float(offset.flat[0])
        return f"is the answer {'plus' if c > 0 else 'minus'} {abs(c):.6g} at every entry"
    sizes = sorted({n for n in counts.values() if n > 1})
    for parts in sizes:
        found = _permutation(got, expected, parts, rtol, atol)
        if found:
            axis, where = found
            return f"{_blocks_held(where, parts, _axis_word(got.ndim, axis))}: " \
                   f"{_pairs_text(_moves(got.shape, axis, parts, where))}"
    return _permutation_per_block(got, expected, sizes, rtol, atol)


def _clipped(got, expected, rtol, atol) -> str | None:
    """A result clipped at 0 where the answer has negative entries: no negative entry and exact zeros (clipped, not
    squared: a float result of random inputs is exactly 0 by a clip, or where nothing was written, which is
    :func:`left_at_zero`'s when the rest is right); said as the answer itself clipped where it is, else as clipped
    values of another computation (on one device a result of 2 x 2 has one or two of each)."""
    negative, zeros = int((expected < -atol).sum()), int((got == 0).sum())
    if not negative or (got < 0).any() or not zeros:
        return None
    if close(got, np.maximum(expected, 0), rtol, atol):
        return (f"is the answer with each of its {plural(negative, 'negative entry', 'negative entries')} set to 0 and "
                "the others right: a relu applied to the result itself")
    written = got != 0
    if close(got[written], expected[written], rtol, atol):
        return None
    return (f"has no negative entry, where the answer has {negative}, and {plural(zeros, 'entry', 'entries')} exactly "
            "0: it is clipped at 0, as a relu clips what it is applied to")


def _blocks_held(where: dict[int, int], parts: int, word: str) -> str:
    """How the answer's blocks are held: each once in another order (turned round by k places, where that is the
    order: block b holding what block b + k should, an index off by k), or some more than once (others never)."""
    if len(set(where.values())) == len(where):
        turned = {(p - b) % parts for b, p in where.items()}
        if len(where) == parts and len(turned) == 1 and parts > 2:
            k = turned.pop()
            return (f"holds the right {parts} blocks of {word} turned round by {k} place{'s' if k > 1 else ''}: block b "
                    f"holds what block (b + {k}) mod {parts} should")
        return f"holds the right {parts} blocks of {word} in the wrong order"
    return f"holds in each of its {parts} blocks of {word} one of the answer's, but not each once"


def _moves(shape, axis: int, parts: int, where: dict[int, int]) -> list[str]:
    word, bounds = _axis_word(len(shape), axis), _bounds(shape[axis], parts)
    return [f"{word} {_span(*bounds[b])} hold what {word} {_span(*bounds[p])} should"
            for b, p in where.items() if b != p]


def _permutation_per_block(got, expected, sizes, rtol, atol) -> str | None:
    """Blocks along one axis reordered differently within each block along another (each device's columns
    holding its rows in another order), said per block that is out of order."""
    if got.ndim != 2:
        return None
    for across in (1, 0):
        along = 1 - across
        for pieces in sizes:
            if got.shape[across] % pieces:
                continue
            bounds = _bounds(got.shape[across], pieces)
            for parts in sizes:
                found = [_permutation(np.take(got, range(lo, hi), axis=across),
                                      np.take(expected, range(lo, hi), axis=across), parts, rtol, atol)
                         for lo, hi in bounds]
                right = [close(np.take(got, range(lo, hi), axis=across), np.take(expected, range(lo, hi), axis=across),
                                rtol, atol) for lo, hi in bounds]
                if all(f or ok for f, ok in zip(found, right)) and any(f and f[0] == along for f in found) \
                        and all(f is None or f[0] == along for f in found):
                    word = _axis_word(2, across)
                    moved = [f"in {word} {_span(*bounds[k])}, {move}" for k, f in enumerate(found) if f
                             for move in _moves(got.shape, along, parts, f[1])]
                    once = all(len(set(f[1].values())) == len(f[1]) for f in found if f)
                    held = (f"in the wrong order, in a different order in each of the {pieces} blocks of {word}"
                            if once else f"in each of the {pieces} blocks of {word}, but not each once")
                    return f"holds the answer's blocks of {_axis_word(2, along)} {held}: {_pairs_text(moved)}"
    return None


def locate(got, expected, *, counts: dict | None = None, out: Split | None = None, rtol: float = 1e-4,
           atol: float = 1e-5) -> str | None:
    """Where ``got`` differs from ``expected``, by blocks: the blocks (of ``out``, or equal blocks along an
    axis, for each count of the task) that are right and those that are not, when some are right."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or got.ndim == 0:
        return None
    tries = [(out.axis, out.parts, out.owner)] if out else []
    sizes = sorted({n for n in (counts or {}).values() if n > 1})
    tries += [(axis, n, None) for n in sizes for axis in range(got.ndim)]
    for axis, parts, owner in tries:
        if axis >= got.ndim or got.shape[axis] < parts or (owner is None and got.shape[axis] % parts):
            continue
        right = [close(a, b, rtol, atol) for a, b in zip(_blocks(got, axis, parts), _blocks(expected, axis, parts))]
        if any(right) and not all(right):
            wrong = [j for j, ok in enumerate(right) if not ok]
            if owner:
                return (f"is right on {plural(parts - len(wrong), owner)} and wrong on {owner} "
                        f"{', '.join(map(str, wrong))}")
            word, bounds = _axis_word(got.ndim, axis), _bounds(got.shape[axis], parts)
            return (f"is right in {word} {', '.join(_span(*bounds[j]) for j, ok in enumerate(right) if ok)} and wrong "
                    f"in {word} {', '.join(_span(*bounds[j]) for j in wrong)}")
    return None


def _masked(inputs: tuple, split: Split, j: int) -> tuple:
    """The inputs with every block of ``split``'s input but block j set to zero."""
    x = np.asarray(inputs[split.arg])
    lo, hi = _bounds(x.shape[split.axis], split.parts)[j]
    keep = np.zeros(x.shape[split.axis], bool)
    keep[lo:hi] = True
    shape = [1] * x.ndim
    shape[split.axis] = -1
    masked = np.where(keep.reshape(shape), x, np.zeros((), x.dtype)).astype(x.dtype)
    return tuple(masked if i == split.arg else a for i, a in enumerate(inputs))


@dataclass
class _Contribution:
    """What the student's function made of one block of one input, in one block of the result."""

    j: int  # the input block that was kept
    b: int | None  # the result's block (None: the whole result)
    kind: str  # ok | missing | scaled | lands | other
    scale: float = 1.0
    belongs: int | None = None  # for "lands": the result block it belongs in
    expected: bool = True  # the reference's result block depends on the input block

    @property
    def times(self) -> int | None:
        """How many times the student's result block counts the input block where the reference's counts it once:
        1, 0 (left out) or a whole number (counted that often); None otherwise."""
        return {"ok": 1, "missing": 0}.get(self.kind, _times(self.scale) and round(self.scale))


def _contributions(s, r, j: int, out: Split | None, rtol, atol) -> list[_Contribution]:
    if out is None or np.ndim(r) == 0:
        pieces = [(None, s, r)]
    else:
        pieces = list(zip(range(out.parts), _blocks(s, out.axis, out.parts), _blocks(r, out.axis, out.parts)))
    found = []
    for b, sb, rb in pieces:
        if close(sb, rb, rtol, atol):
            found.append(_Contribution(j, b, "ok", expected=not _tiny(rb, atol)))
        elif _tiny(rb, atol):
            belongs = next((p for p, _, rp in pieces if not _tiny(rp, atol) and close(sb, rp, rtol, atol)), None)
            found.append(_Contribution(j, b, "lands", belongs=belongs))
        elif _tiny(sb, atol):
            found.append(_Contribution(j, b, "missing"))
        else:
            c = factor(sb, rb, rtol, atol)
            found.append(_Contribution(j, b, "scaled", scale=c) if c is not None else _Contribution(j, b, "other"))
    return found


def _times(c: float) -> str | None:
    """"twice", "3 times" for a whole number of times c >= 2 (a block counted more than once), else None."""
    k = round(c)
    if k < 2 or not _near(c, k):
        return None
    return "twice" if k == 2 else f"{k} times"


def _whose(split: Split, out: Split | None, c: _Contribution) -> str:
    where = "" if c.b is None or out is None else f" from {out.owner} {c.b}'s result"
    return f"{split.block(c.j)}{where}"


def _said(found: list[_Contribution], split: Split, out: Split | None, counts: dict) -> str | None:
    wrong = sorted((c for c in found if c.kind != "ok"), key=lambda c: (c.b or 0, c.j))
    if not wrong:
        return None
    kinds = {c.kind for c in wrong}
    scales = {round(c.scale, 6) for c in wrong if c.kind == "scaled"}
    if kinds == {"scaled"} and len(scales) == 1 and len(wrong) == len(found):
        return f"is {named_factor(wrong[0].scale, counts)}, and so is what each block of {split.name} adds alone"
    if kinds <= {"missing", "scaled"} and all(_times(c) for c in scales):
        each = _per_result(found, split, out)
        if each:
            return each
        missing = [_whose(split, out, c) for c in wrong if c.kind == "missing"]
        said = [f"leaves out {_pairs_text(missing)}"] if missing else []
        for k in sorted({round(c) for c in scales}):
            counted = [_whose(split, out, c) for c in wrong if c.kind == "scaled" and round(c.scale) == k]
            said.append(f"counts {_times(k)} {_pairs_text(counted)}")
        return ", and ".join(said)
    if kinds <= {"lands", "missing"} and all(c.belongs is not None for c in wrong if c.kind == "lands") \
            and any(c.kind == "lands" for c in wrong):
        moved = [f"{split.block(c.j)} lands in {out.owner} {c.b}'s result, where it belongs in {out.owner} "
                 f"{c.belongs}'s" for c in sorted(wrong, key=lambda c: c.j) if c.kind == "lands"]
        return f"puts blocks in the wrong place: {_pairs_text(moved)}"
    return None


def _per_result(found: list[_Contribution], split: Split, out: Split | None) -> str | None:
    """Where every block of the reference's result counts every block of ``split``'s input once and some block of
    the student's result is wrong in more than one of them, what each result block counts, said per result block
    (round 37: a ring that kept only the block that arrived last was told a list of what it left out)."""
    if out is None or not all(c.expected and c.times is not None for c in found):
        return None
    rows: dict[int, dict[int, int]] = {}
    for c in found:
        rows.setdefault(c.b, {})[c.j] = c.times
    if max(sum(t != 1 for t in row.values()) for row in rows.values()) < 2:
        return None  # one wrong block per result at most: the list says it as plainly
    blocks = len(next(iter(rows.values())))
    said = []
    if all(set(row.values()) <= {0, 1} for row in rows.values()):
        kept = {b: [j for j, t in sorted(row.items()) if t] for b, row in sorted(rows.items())}
        held = {len(js) for js in kept.values()}
        some = str(held.pop()) if len(held) == 1 else "some"
        head = f"holds only {some} of {split.name}'s {blocks} blocks in each {out.owner}'s result"
        for b, js in kept.items():
            said.append(f"{out.owner} {b}'s {_numbered('block', js)}" if js else f"{out.owner} {b}'s none")
    else:
        head = f"counts {split.name}'s blocks unevenly in each {out.owner}'s result"
        for b, row in sorted(rows.items()):
            said.append(f"{out.owner} {b}'s counts " + _and([f"block {j} {_often(t)}" for j, t in sorted(row.items())]))
    shown = "; ".join(said[:MAX_PAIRS]) + ("; ..." if len(said) > MAX_PAIRS else "")
    return f"{head}: {shown}; the answer counts each block once in every result"


def _often(t: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(t, f"{t} times")


def _numbered(word: str, numbers: list[int]) -> str:
    return f"{word} {numbers[0]}" if len(numbers) == 1 else f"{word}s {_and([str(n) for n in numbers])}"


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def probed(probe: Probe, got, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """What running the student's function and the reference with one block of an input kept at a time shows,
    for the first split input the task is additive in and whose blocks account for ``got``; or None."""
    if probe.rerun is None or probe.reference is None:
        return None
    got = np.asarray(got, np.float64)
    expected = np.asarray(probe.reference(*probe.inputs), np.float64)
    for split in probe.splits:
        length = np.shape(probe.inputs[split.arg])[split.axis]
        js = [j for j, (lo, hi) in enumerate(_bounds(length, split.parts)) if hi > lo]
        if len(js) < 2:
            continue
        masked = [_masked(probe.inputs, split, j) for j in js]
        refs = [np.asarray(probe.reference(*m), np.float64) for m in masked]
        if not close(sum(refs), expected, rtol, atol):
            continue  # the task is not additive in this input: one block at a time says nothing of the whole
        try:
            mine = [np.asarray(probe.rerun(*m), np.float64) for m in masked]
        except Exception:  # noqa: BLE001 - a rerun that fails (the student's raise, a time-out) explains nothing
            return None
        if any(m.shape != expected.shape for m in mine) or not close(sum(mine), got, rtol, atol):
            continue  # the student's function is not additive in it either: its blocks do not explain the value
        found = [c for j, s, r in zip(js, mine, refs) for c in _contributions(s, r, j, probe.out, rtol, atol)]
        said = _said(found, split, probe.out, probe.counts)
        if said:
            return said
    return None


def _strided(length: int, parts: int) -> np.ndarray:
    """The indices of a length split into ``parts`` strided pieces, piece after piece (piece d: d, d + parts, ...),
    one index per position of the consecutive blocks the task splits it into."""
    size = -(-length // parts)
    return np.array([i for d in range(parts) for i in range(d, size * parts, parts) if i < length])


def reordered(probe: Probe, got, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """Where ``got`` is the reference's answer for a split input taken in strided order (each owner's piece holding
    every parts-th entry, not a block of consecutive ones), the sentence that says so; or None. Where that holds
    for several inputs (a dot product cannot tell which of its two was reordered), it names them together and
    claims neither. Needs only the reference, never the student's code."""
    if probe.reference is None:
        return None
    expected = np.asarray(probe.reference(*probe.inputs), np.float64)
    if close(expected, got, rtol, atol):
        return None
    found = []
    for split in probe.splits:
        x = np.asarray(probe.inputs[split.arg])
        length = x.shape[split.axis]
        order = _strided(length, split.parts)
        if split.parts < 2 or length <= split.parts or (order == np.arange(length)).all():
            continue
        moved = tuple(np.take(x, order, axis=split.axis) if i == split.arg else a for i, a in enumerate(probe.inputs))
        if close(probe.reference(*moved), got, rtol, atol) and split.name not in [f.name for f in found]:
            found.append(split)
    if not found:
        return None
    word, n = _axis_word(np.ndim(probe.inputs[found[0].arg]), found[0].axis), found[0].parts
    pieces = f"{found[0].owner} d's part holding {word} d, d + {n}, d + {2 * n}, ..."
    if len(found) > 1:
        names = " and ".join(f.name for f in found)
        return (f"is the answer for {names} split differently: one of them strided ({pieces}), the other into blocks "
                f"of consecutive {word}")
    name = found[0].name
    return (f"is the answer for {name} split strided ({pieces}), where the task splits {name} into blocks of "
            f"consecutive {word}")


def _lengths(probe: Probe) -> dict:
    """The lengths of the named inputs' axes, as counts a wrong factor may be (a mean divided by a row's length):
    {"entries along axis 1 of x": 7}."""
    return {f"entries along axis {a} of {probe.name(k)}": n for k, x in enumerate(probe.inputs) if probe.name(k)
            for a, n in enumerate(np.shape(x))}


def left_at_zero(got, expected, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """Where every wrong entry is 0 and the answer is not, and the rest is right: which rows (a part of the result
    that nothing wrote, or wrote zeros to)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or got.ndim == 0:
        return None
    wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    if not wrong.any() or wrong.all() or np.any(got[wrong] != 0) or np.any(expected[wrong] == 0):
        return None
    rows = sorted({int(i) for i in np.argwhere(wrong)[:, 0]})
    return (f"is 0 at each of its {int(wrong.sum())} wrong entries (in row{'s' if len(rows) > 1 else ''} "
            f"{ranges(rows)}), and right at every other")


def reach(probe: Probe, got, expected, atol: float = 1e-5) -> str | None:
    """Which entries of the result a change of one slice of an input reaches, the student's function against the
    reference (grader.suite.dependence), where the two differ; None without a rerun and a reference."""
    if probe.rerun is None or probe.reference is None:
        return None
    names = tuple(probe.name(k) or "" for k in range(len(probe.inputs)))
    return dependence.told(probe.reference, probe.rerun, probe.inputs, names, got, expected, atol)


def measured(got, expected, *, counts: dict | None = None, probe: Probe | None = None, starts: tuple = (),
             rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """How a wrong value differs: a relation on every entry, else what one block at a time shows, else an input
    the answer is right for taken in strided order, else its wrong entries all 0, else how far a change of one
    slice of an input reaches; or None."""
    counts = {**(probe.counts if probe else {}), **(counts or {})}
    starts = starts or (probe.inputs if probe else ())
    return (relation(got, expected, counts=counts, starts=starts, rtol=rtol, atol=atol,
                     lengths=_lengths(probe) if probe else None)
            or (probe and probed(Probe(**{**probe.__dict__, "counts": counts}), got, rtol, atol))
            or (probe and reordered(probe, got, rtol, atol)) or left_at_zero(got, expected, rtol, atol)
            or (probe and reach(probe, got, expected, atol)) or None)
