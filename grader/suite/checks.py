"""Checks for hidden suites: compare what a student returned with a NumPy reference.

Each check raises AssertionError with one sentence a student can act on: what was called, what came
back, what was expected. Values arrive as plain NumPy data (the worker converted them), so nothing
the student wrote runs here.
"""

from __future__ import annotations

import re

import numpy as np

from grader.errors import StudentFailure
from grader.layout import plural
from grader.suite.value_patterns import recognise


class WrongProgram(AssertionError):
    """``student.program``'s values did not match the reference on one of its input sets (the message
    says which). ``program`` is the program, for a test that explains the failure better from its
    ``value`` or ``hlo`` before failing: a program with wrong values never passes a test."""

    def __init__(self, message: str, program):
        super().__init__(message)
        self.program = program


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


def expect_close(got, expected, what: str, rtol: float = 1e-4, atol: float = 1e-5, **patterns) -> np.ndarray:
    """Shape must match exactly; values within float32-friendly tolerances of a float64 reference.

    ``patterns`` (devices, parts, rows, device_axis) tell :func:`grader.suite.value_patterns.recognise`
    what the values mean, so a wrong value whose pattern names a mistake fails with that sentence.
    """
    expected = np.asarray(expected)
    arr = expect_shape(got, expected.shape, what)
    if arr.dtype.kind not in "biufc":
        raise AssertionError(f"{what} returned dtype {arr.dtype}, expected numbers")
    arr64 = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
    if np.isnan(arr64).any() and not np.isnan(expected).any():
        raise AssertionError(f"{what} returned NaN values")
    close = np.isclose(arr64, expected, rtol=rtol, atol=atol)
    if not close.all() and patterns and arr.dtype.kind != "c":
        said = recognise(arr64, expected, rtol=rtol, atol=atol, **patterns)
        if said:
            raise AssertionError(f"{what} {said}")
    if not close.all():
        if arr.ndim == 0:
            raise AssertionError(f"{what} returned {arr64.item():.6g}, expected {expected.item():.6g}")
        bad = np.argwhere(~close)
        idx = tuple(int(i) for i in bad[0])
        raise AssertionError(f"{what} is wrong at {len(bad)} of {plural(arr.size, 'entry', 'entries')}; first at index "
                             f"{idx}: got {arr64[idx]:.6g}, expected {expected[idx]:.6g}")
    return arr


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


def expect_raises(call, exc_type: str, what: str, mentions=(), why: str = "") -> str:
    """Run ``call()`` (a student call) and require it to raise ``exc_type`` naming each of ``mentions``.

    Returns the student's error message. An error raised inside JAX or another library (not by the
    student's own code: ``StudentFailure.raised_in``), a student error of another type, a returned
    value, or a message that leaves out one of ``mentions`` fails the check; ``why`` (a sentence) says
    what the error should be about. Failures that are not a raised exception (time-out, crash, not
    started) propagate unchanged, so they are reported as what they are.
    """
    why = f" ({why})" if why else ""
    try:
        call()
    except StudentFailure as failure:
        if failure.kind != "raised":
            raise
        if failure.raised_in in ("jax", "library"):
            inside = "JAX" if failure.raised_in == "jax" else "a library your code called"
            raise AssertionError(f"{what} raised {failure.exc_type} inside {inside}, not from a check of your own: "
                                 f"check the input yourself first and raise {exc_type}{why}") from None
        if failure.exc_type != exc_type:
            raise AssertionError(f"{what} raised {failure.exc_type}, expected {exc_type}{why}") from None
        text = failure.message.partition(f"raised {exc_type}:")[2].strip()
        missing = [str(m) for m in mentions if not _names(text, m)]
        if missing:
            raise AssertionError(f"{what} raised {exc_type} as it should, but its message does not name "
                                 f"{' and '.join(missing)}{why}: \"{text}\"") from None
        return text
    raise AssertionError(f"{what} returned a value, expected it to raise {exc_type}{why}")
