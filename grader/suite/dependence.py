"""Which parts of a result each part of the inputs reaches, in the student's function and in the reference:
the communication a function does or lacks, measured from the numbers.

A wrong value whose entries are related to the answer by nothing simple (not a factor, not an offset, not
blocks moved) is often a computation that combines the wrong parts of its inputs: a mean taken over each
position across the devices where one over every number was asked for, a device that never sees another
device's data, a statistic of everything where one per column belongs. Neither value says so; changing
the inputs does. The student's function and the reference run again on the test's inputs with one slice
of one input changed at a time (``x[:, 3]``: every entry whose index along axis 1 is 3), and for each
change the entries of the result that move are compared: "changing only x[:, 3] changes your result at
[:, 3] only; it changes the answer at every entry". The first change whose reach differs is said. Nothing
is claimed about why: the sentence is what the two functions were seen to do.

The reruns go through the suite's ``rerun`` (the student's worker) and ``reference`` (NumPy in the grader's
process); nothing here runs student code itself. They happen only after a failure, a bounded number of
times (:data:`MOST`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np


MOST = 16  # changed inputs tried at most, over all inputs and axes
_PER_AXIS = 6  # slices of one axis tried at most: the first ones, the middle and the last
_RTOL = 1e-5


def _indices(length: int) -> list[int]:
    if length <= _PER_AXIS:
        return list(range(length))
    return sorted({0, 1, 2, length // 2, length - 2, length - 1})


def _slice_text(ndim: int, axis: int, i: int) -> str:
    return "[" + ", ".join(str(i) if a == axis else ":" for a in range(ndim)) + "]"


def _changes(inputs: tuple) -> list[tuple[int, int, int, tuple]]:
    """(input, axis, index, changed inputs) for each slice tried, axis by axis, at most MOST."""
    found = []
    for k, x in enumerate(inputs):
        if not isinstance(x, np.ndarray) or x.dtype.kind not in "fiu" or x.ndim == 0 or x.size < 2:
            continue
        step = 1 if x.dtype.kind in "iu" else max(1.0, float(np.abs(x).max(initial=0)))
        for axis in range(x.ndim):
            if x.shape[axis] < 2:
                continue
            for i in _indices(x.shape[axis]):
                moved = x.copy()
                index = tuple(i if a == axis else slice(None) for a in range(x.ndim))
                # a change that differs along the slice: one the same everywhere vanishes in a function that
                # removes a slice's own mean, and would look unreached
                ramp = 1 + np.arange(moved[index].size).reshape(moved[index].shape) % 3
                moved[index] = moved[index] + (ramp * step).astype(x.dtype)
                found.append((k, axis, i, tuple(moved if j == k else a for j, a in enumerate(inputs))))
                if len(found) == MOST:
                    return found
    return found


def _moved(after: np.ndarray, before: np.ndarray, atol: float) -> np.ndarray:
    return ~np.isclose(after, before, rtol=_RTOL, atol=atol)


def _where(mask: np.ndarray) -> str | None:
    """The entries a mask holds, as a student reads them: every entry, none, or up to three whole slices along
    one axis ([:, 3], [1, :]); None for scattered entries, whose count says how much moved, not which
    communication is missing."""
    if mask.all():
        return "at every entry"
    if not mask.any():
        return "nowhere"
    for axis in range(mask.ndim):
        rest = tuple(a for a in range(mask.ndim) if a != axis)
        along = mask.any(axis=rest) if rest else mask
        if rest and (mask.all(axis=rest) == along).all():
            hit = np.flatnonzero(along)
            if len(hit) <= 3:
                return "at " + " and ".join(_slice_text(mask.ndim, axis, int(i)) for i in hit) + " only"
    return None


def told(reference: Callable, rerun: Callable, inputs: tuple, names: tuple[str, ...], got, expected,
         atol: float) -> str | None:
    """The first change of one slice of one input whose reach in the student's result differs from its reach in
    the reference's, in words, measured from ``got`` and ``expected`` (the two results on ``inputs``, which the
    test has already); None where every change reaches the same entries, or no reach can be named, where a
    rerun fails, or where the results are not arrays of the reference's shape."""
    base, base_ref = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if base.shape != base_ref.shape or base.ndim == 0 or not np.isfinite(base).all():
        return None
    scale = atol * max(1.0, float(np.abs(base_ref).max(initial=0)))
    for k, axis, i, moved in _changes(inputs):
        theirs = _moved(np.asarray(reference(*moved), np.float64), base_ref, scale)
        try:
            mine = _moved(np.asarray(rerun(*moved), np.float64), base, scale)
        except Exception:  # noqa: BLE001 - a rerun that fails (the student's raise, a time-out) explains nothing
            return None
        if mine.shape != theirs.shape:
            return None
        if (mine != theirs).any() and _where(mine) and _where(theirs):
            name = names[k] if k < len(names) and names[k] else None
            where = _slice_text(inputs[k].ndim, axis, i)
            changed = f"{name}{where}" if name else f"{where} of input {k}"
            return (f"depends on {name or f'input {k}'} otherwise than the answer: changing only {changed} changes your "
                    f"result {_where(mine)}; it changes the answer {_where(theirs)}")
    return None
