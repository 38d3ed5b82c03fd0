"""Checks for hidden suites: compare what a student returned with a NumPy reference.

Each check raises AssertionError with one sentence a student can act on: what was called, what came
back, what was expected. Values arrive as plain NumPy data (the worker converted them), so nothing
the student wrote runs here.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np

from grader import protocol
from grader.errors import StudentFailure
from grader.layout import plural
from grader.suite import differences
from grader.suite.value_patterns import PATTERNS, find, recognise


class ProgramFailure(AssertionError):
    """A failure of ``student.program``'s program; ``program`` is the program, for a test that reads its
    ``value`` or ``hlo`` before failing."""

    def __init__(self, message: str, program):
        super().__init__(message)
        self.program = program


class Unexplained(AssertionError):
    """A wrong value of which nothing was measured but where it differs: a report leads with another case of the
    task whose message measured more (grader.grading.scoring), where there is one."""


class WrongProgram(ProgramFailure):
    """The program's values did not match the reference on one of its input sets (the message says which):
    a test may explain the failure better from its ``value`` or ``hlo`` before failing; a program with
    wrong values never passes a test. ``measured``: how its communication differs from the reference's
    program, where it does (then already in the message, which a suite's reading of the values should
    not replace). ``results``: the positions, among the program's results, of the wrong ones (None: not told)."""

    def __init__(self, message: str, program, measured: str | None = None, results: frozenset[int] | None = None):
        super().__init__(message, program)
        self.measured, self.results = measured, results
        self.unexplained = False  # nothing measured but where the values differ (as Unexplained)


class Bypass(ProgramFailure):
    """The program reached its answer by another mechanism than the statement asks for (grader.suite.bypass
    says which): told before its values, and not a WrongProgram, so no suite explains it by a symptom."""


def _shape_text(shape) -> str:
    return "a scalar" if tuple(shape) == () else f"shape {tuple(shape)}"


def as_array(got, what: str) -> np.ndarray:
    """The value as an ndarray, or a clear failure if it is not numeric data."""
    if isinstance(got, np.ndarray):
        return got
    if isinstance(got, (bool, int, float, complex, np.generic)):
        return np.asarray(got)
    raise AssertionError(f"{what} returned {type(got).__name__}, expected an array")


def expect_shape(got, shape, what: str) -> np.ndarray:
    arr = as_array(got, what)
    if arr.shape != tuple(shape):
        raise AssertionError(f"{what} returned {_shape_text(arr.shape)}, expected {_shape_text(shape)}")
    return arr


def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name


def _numeric(arr: np.ndarray) -> bool:
    """Numbers: NumPy's own kinds, or a narrow float/int of JAX's (bfloat16, float8, int4) that crossed as one."""
    return arr.dtype.kind in "biufc" or protocol.is_narrow_dtype(arr.dtype)


NOT_FINITE = {
    "NaN": "NaN comes from 0 / 0, inf - inf or the square root of a negative number, e.g. a variance or a mean "
           "divided by a count of 0",
    "inf": "inf comes from dividing a non-zero number by 0, e.g. by a standard deviation or a count of 0",
}


def _not_finite(arr64, expected, what: str, causes: dict) -> str | None:
    """The NaN or inf entries the reference does not have, where the first is, and where such values come from."""
    for name, bad in (("NaN", np.isnan), ("inf", np.isinf)):
        where = bad(arr64) & ~bad(expected)
        if where.any():
            first = tuple(int(i) for i in np.argwhere(where)[0])
            at = f" at {where.sum()} of {plural(arr64.size, 'entry', 'entries')}, first at index {first}" \
                if arr64.ndim else ""
            cause = causes.get(name.lower()) or NOT_FINITE[name]
            return f"{what} returned {name}{at} (expected {expected[first]:.6g}): {cause}"
    return None


CAUSES = (*PATTERNS, "nan", "inf", "dtype")
# Patterns that say where a value is wrong rather than how: a measured difference (differences.measured) goes first.
WEAK_FACTS = ("disagree", "epsilon")


def _difference(arr64, expected, rtol, atol, causes, counts, probe, starts, patterns) -> str | None:
    """What a wrong value's difference is, strongest first: a pattern the suite declared that says how it is
    wrong, a relation measured on every entry or one block at a time, a pattern that says only where it is
    wrong (devices that disagree, close but outside the tolerance), then which blocks are right."""
    found = find(arr64, expected, rtol=rtol, atol=atol, **patterns) if patterns else None
    weak = found and (found[0] in WEAK_FACTS or (found[0] == "factor" and "factor" not in causes))
    if found and not weak:  # a bare factor the suite gives no cause for is measured: it may be a count over another
        return recognise(arr64, expected, rtol=rtol, atol=atol, causes=causes, **patterns)
    return (differences.measured(arr64, expected, counts=counts, probe=probe, starts=starts, rtol=rtol, atol=atol)
            or (found and recognise(arr64, expected, rtol=rtol, atol=atol, causes=causes, **patterns))
            or differences.locate(arr64, expected, counts=counts, out=probe.out if probe else None, rtol=rtol,
                                  atol=atol))


def _checked(causes: dict | None) -> dict:
    """``causes`` as a dict whose keys all name something a cause can explain; another key is the suite's typo."""
    causes = dict(causes or {})
    unknown = sorted(set(causes) - set(CAUSES))
    if unknown:
        raise ValueError(f"causes has no {', '.join(map(repr, unknown))}: its keys are {', '.join(CAUSES)}")
    return causes


def expect_close(got, expected, what: str, rtol: float = 1e-4, atol: float = 1e-5, dtype=None,
                 causes: dict | None = None, counts: dict | None = None, probe: differences.Probe | None = None,
                 starts: tuple = (), **patterns) -> np.ndarray:
    """Shape must match exactly; values within float32-friendly tolerances of a float64 reference.

    ``dtype``: the dtype the answer keeps (usually the input's): another one fails, saying it changed.
    ``patterns`` (devices, parts, rows, device_axis) tell :func:`grader.suite.value_patterns.find`
    what the values mean, so a wrong value whose pattern is a fact (n times the answer, one device's
    part missing) says that fact; ``causes`` maps a pattern (or "nan", "inf", "dtype") to the sentence
    that explains it in this task, said after the fact. Without a cause the message states only facts.

    Where no pattern fits, :func:`grader.suite.differences.measured` measures the difference: a relation
    on every entry (a factor named by ``counts``, name -> number, e.g. {"devices": 4}; a transpose; an
    offset; blocks in another order; one of ``starts``, the call's inputs, changed by a factor of the right
    change), what ``probe`` shows when the student's function runs again with
    one block of an input at a time (only now, after the failure), or which blocks are right.
    """
    causes = _checked(causes)
    expected = np.asarray(expected)
    if protocol.is_narrow_dtype(expected.dtype):
        expected = expected.astype(np.float64)
    all_counts = {**({"devices": patterns["devices"]} if patterns.get("devices") else {}), **(counts or {})}
    try:
        arr = expect_shape(got, expected.shape, what)
    except AssertionError as wrong:
        said = (differences.restacked(got, expected) if _numeric(np.asarray(got)) else None) or \
            differences.shape_relation(np.shape(got), expected.shape, all_counts)
        raise AssertionError(f"{wrong}: {said}" if said else str(wrong)) from None
    if not _numeric(arr):
        raise AssertionError(f"{what} returned dtype {arr.dtype}, expected numbers")
    if dtype is not None and arr.dtype != np.dtype(dtype):
        why = f" ({causes['dtype']})" if causes.get("dtype") else ""
        raise AssertionError(f"{what}: dtype changed from {_dtype_name(dtype)} to {_dtype_name(arr.dtype)}, but the "
                             f"dtype is part of the answer{why}")
    arr64 = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
    said = _not_finite(arr64, expected, what, causes)
    if said:
        raise AssertionError(said)
    close = np.isclose(arr64, expected, rtol=rtol, atol=atol)
    said = _difference(arr64, expected, rtol, atol, causes, all_counts, probe, starts, patterns) \
        if not close.all() and arr.dtype.kind != "c" else None
    if said:
        got_and_expected = f"returned {arr64.item():.6g}, expected {expected.item():.6g}: it " if arr.ndim == 0 \
            and not said.startswith("is ") else ""
        raise AssertionError(f"{what} {got_and_expected}{said}")
    if not close.all():
        rounded = _rounded(arr, arr64, expected)
        if arr.ndim == 0:
            raise AssertionError(f"{what} returned {arr64.item():.6g}, expected {expected.item():.6g}{rounded}")
        bad = np.argwhere(~close)
        idx = tuple(int(i) for i in bad[0])
        raise Unexplained(f"{what} is wrong at {len(bad)} of {plural(arr.size, 'entry', 'entries')}; first at index "
                          f"{idx}: got {arr64[idx]:.6g}, expected {expected[idx]:.6g}{rounded}")
    return arr


# Past this relative error a narrow result is wrong for another reason than its rounding.
_ROUNDING = 0.05
_DIGITS = {2: "about 3", 1: "1 or 2"}  # significant decimal digits a narrow float of this many bytes keeps


def _narrow_values(arr64, expected) -> str | None:
    """The narrow float every entry of a wider result is a value of, where the answer's entries are not (at least
    two of them): the result was computed in it and cast back ("bfloat16", "float16"), else None."""
    if arr64.size < 2 or not np.isfinite(arr64).all() or not np.isfinite(expected).all():
        return None
    kinds = {"bfloat16": lambda v: (v.astype(np.float32).view(np.uint32) & 0xFFFF) == 0,
             "float16": lambda v: v.astype(np.float16).astype(np.float64) == v}
    for name, held in kinds.items():
        with np.errstate(over="ignore"):
            if held(arr64).all() and int(np.count_nonzero(~held(expected))) >= 2:
                return name
    return None


def _rounded(arr, arr64, expected) -> str:
    """Where the result is a narrow float (bfloat16, float16, float8), or a wider one whose every entry is a
    narrow float's value (computed in it and cast back, round 48), off by no more than its rounding accumulates
    to: that measured fact, and the dtype to compute in."""
    narrow = arr.dtype.itemsize <= 2 and "float" in arr.dtype.name
    cast = None if narrow or "float" not in arr.dtype.name else _narrow_values(arr64, expected)
    if not (narrow or cast):
        return ""
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
    if float(np.max(np.abs(arr64 - expected), initial=0.0)) > _ROUNDING * scale:
        return ""
    if cast:
        return (f": every entry of the result is a {cast} value cast back to {_dtype_name(arr.dtype)} (a {cast} keeps "
                f"{_DIGITS[2]} significant digits), and it is off by about what that rounds away: some step computes "
                f"in {cast}; compute in the inputs' float32")
    return (f": the result is {_dtype_name(arr.dtype)}, which keeps {_DIGITS[arr.dtype.itemsize]} significant "
            "digits, and is off by about what that rounds away; compute and return it in the inputs' float32")


def expect_sequence(got, length: int, what: str) -> list:
    """A tuple/list of exactly ``length`` items (e.g. a function that returns (sum, mean, max))."""
    if not isinstance(got, (tuple, list)):
        raise AssertionError(f"{what} returned {type(got).__name__}, expected a tuple of {length} values")
    if len(got) != length:
        raise AssertionError(f"{what} returned {len(got)} values, expected {length}")
    return list(got)


def _names(text: str, value) -> bool:
    """True if ``text`` mentions ``value`` as a whole word (``4`` is in "4 devices", not in "14")."""
    return re.search(rf"(?<![\w.-]){re.escape(str(value))}(?![\w]|\.\d)", text) is not None


# Whole numbers in a message: "-1", "4" and the 4 of "(4, 6)", not the parts of "4.5", "x4" or "14".
_NUMBER = re.compile(r"(?<![\w.-])-?\d+(?![\w]|\.\d)")
# How many numbers a message may name that are no fact of the call ("axis 0", "rank 3" and the like).
OTHER_NUMBERS = 2


def _unrelated(text: str, mentions, facts) -> list[str]:
    """The numbers ``text`` names that are no fact of the call: not one of ``mentions`` or next to one (the end of
    a range, "0 to 3"), not one of ``facts`` (the input's own sizes), not 0, 1 or 2."""
    known = {0, 1, 2, *(int(f) for f in facts)}
    known |= {int(m) + d for m in mentions for d in (-1, 0, 1)}
    return list(dict.fromkeys(n for n in _NUMBER.findall(text) if int(n) not in known))


@contextlib.contextmanager
def explained(explain):
    """Around a ``student.program`` whose value may be wrong: where no difference of its communication was measured
    (that says more), ``explain()`` may raise the suite's own AssertionError naming the mistake a second look at
    the values shows (a step n times too large, blocks in mirrored places); else the failure stands as it is."""
    try:
        yield
    except AssertionError as wrong:
        if not getattr(wrong, "measured", None):
            explain()
        raise


def expect_raises(call, exc_type: str, what: str, mentions=(), why: str = "", facts=()) -> str:
    """Run ``call()`` (a student call) and require it to raise ``exc_type`` naming each of ``mentions``.

    Returns the student's error message. An error raised inside JAX or another library (not by the
    student's own code: ``StudentFailure.raised_in``), a student error of another type, a returned
    value, or a message that leaves out one of ``mentions`` fails the check; ``why`` (a sentence) says
    what the error should be about. So does a message that names ``mentions`` among numbers the call
    has nothing to do with (more than OTHER_NUMBERS that are neither ``mentions``, their neighbours, nor
    ``facts``, the sizes of the call's inputs): a list of every small number names none of them.
    Failures that are not a raised exception (time-out, crash, not started) propagate unchanged, so
    they are reported as what they are.
    """
    why = f" ({why})" if why else ""
    try:
        call()
    except StudentFailure as failure:
        if failure.kind != "raised":
            raise
        text = _raised_text(failure, exc_type)
        at = _at(failure)
        if failure.raised_in in ("jax", "library"):
            inside = "JAX" if failure.raised_in == "jax" else "a library your code called"
            raise AssertionError(f"{what} raised {failure.exc_type} inside {inside}{at}, not from a check of your "
                                 f"own: check the input yourself first and raise {exc_type}{why}") from None
        if failure.exc_type != exc_type:
            raise AssertionError(f"{what} raised {failure.exc_type}{at} (\"{text}\"), expected "
                                 f"{exc_type}{why}") from None
        missing = list(dict.fromkeys(str(m) for m in mentions if not _names(text, m)))
        if missing:
            raise AssertionError(f"{what} raised {exc_type} as it should, but its message does not name "
                                 f"{' and '.join(missing)}{why}: \"{text}\"") from None
        unrelated = _unrelated(text, mentions, facts) if mentions else []
        if len(unrelated) > OTHER_NUMBERS:
            listed = ", ".join(unrelated[:4]) + (", ..." if len(unrelated) > 4 else "")
            raise AssertionError(f"{what} raised {exc_type} as it should, but its message also names "
                                 f"{len(unrelated)} numbers this call has nothing to do with ({listed}): name only "
                                 f"this call's own, {' and '.join(dict.fromkeys(str(m) for m in mentions))}{why}: "
                                 f"\"{text}\"") from None
        return text
    raise AssertionError(f"{what} returned a value, expected it to raise {exc_type}{why}")


def _raised_text(failure: StudentFailure, exc_type: str) -> str:
    """The exception's own message (on one line, shortened), without the grader's words around it."""
    if failure.detail is not None:
        text = " ".join(str(failure.detail).split())
        return text if len(text) <= 200 else text[:197] + "..."
    return failure.message.partition(f"raised {failure.exc_type or exc_type}:")[2].strip()


def _at(failure: StudentFailure) -> str:
    """Where in the submission it was raised: file:line and the line itself, when the worker could tell."""
    where = f" at {failure.where}" if failure.where else ""
    line = f": `{' '.join(failure.line.split())[:80]}`" if failure.line else ""
    return where + line
