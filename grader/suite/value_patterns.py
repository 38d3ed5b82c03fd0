"""Wrong values whose pattern is a fact worth telling, and, where the suite says so, the mistake behind it.

"wrong at 7 of 8 entries" is where a student starts; "is 4 times the answer on 4 devices: every
device already holds the total after the psum; return one device's copy" is where they stop. The
first half of that sentence is a fact this module verifies on every entry of the result; the second
is a cause, and only the suite can name it: a factor of n is a psum for a pmean in one task, the
devices' totals added up once more in another, and impossible in a third. So :func:`recognise`
states the fact, and adds the cause the suite declared for that pattern in ``causes`` (a dict from
the pattern's name to the sentence that explains it in the task's terms), never one of its own.

The patterns (the keys of ``causes``):

* ``n_times`` / ``1/n``: n times or 1/n times the answer on n devices (``devices``);
* ``padding``: real/padded times the answer (``rows``: the real and padded row counts of a mean);
  declaring ``rows`` says padding exists in the task, so this one explains itself;
* ``factor``: another constant factor, claimed only on at least two different entries (any wrong
  scalar is some multiple of the answer, which says nothing);
* ``missing_part`` / ``extra_part``: one device's contribution missing or counted twice (``parts``:
  what each device adds);
* ``shifted``: every device holding what its neighbour should (``device_axis``: axis 0 is one row
  per device);
* ``disagree``: devices that hold different values where every device should hold the same;
* ``epsilon``: close to the answer, but outside the tolerance.

It knows nothing of a task: the suite says what the device axis, the parts, the rows and the causes are.
"""

from __future__ import annotations

import numpy as np

from grader.layout import plural
from grader.suite.feedback import ranges

PATTERNS = ("n_times", "1/n", "padding", "factor", "missing_part", "extra_part", "shifted", "disagree", "epsilon")


def close(a, b, rtol: float, atol: float) -> bool:
    """Whether two arrays have one shape and the same values within rtol/atol (compared in float64)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def factor(got, expected, rtol, atol) -> float | None:
    """c with got == c * expected everywhere, if there is one (and expected is not all zeros)."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    scale = np.abs(expected)
    if scale.max(initial=0) <= atol:
        return None
    i = np.unravel_index(np.argmax(scale), scale.shape)
    c = float(got[i] / expected[i])
    return c if close(got, c * expected, rtol, atol) else None


def entries_that_tell(expected, atol) -> int:
    """How many different non-zero values the answer has: a factor shows only across two or more."""
    expected = np.asarray(expected, np.float64)
    values = np.unique(np.round(expected[np.abs(expected) > atol], 6))
    return len(values)


def _factor_fact(c: float, expected, devices: int | None, rows, atol) -> tuple[str, str] | None:
    def near(value):
        return abs(c - value) <= 1e-3 * max(1.0, abs(value))

    if devices and devices > 1 and near(devices):
        return "n_times", f"is {devices} times the answer on {plural(devices, 'device')}"
    if devices and devices > 1 and near(1 / devices):
        return "1/n", f"is 1/{devices} of the answer on {plural(devices, 'device')}"
    if rows and rows[0] != rows[1] and near(rows[0] / rows[1]):
        real, padded = rows
        return "padding", (f"is {real}/{padded} of the answer: the {padded - real} padding rows were counted as real "
                           f"rows (zeros in a mean over {padded}); leave them out, with the mask, and divide by {real}")
    if abs(c - 1) <= 1e-2 or near(0.0) or entries_that_tell(expected, atol) < 2:
        return None  # within 1% of the answer (an epsilon), or one value: no factor to tell
    return "factor", f"is {c:.4g} times the answer at every entry"


def _one_part(got, expected, parts, rtol, atol) -> tuple[str, str] | None:
    for d, part in enumerate(parts):
        if not np.abs(part).max(initial=0) > atol:
            continue  # a device that adds nothing cannot be told missing
        if all(not np.abs(other).max(initial=0) > atol for k, other in enumerate(parts) if k != d):
            continue  # the one device that adds anything: its part twice is every part twice (round 46), a factor
        if close(got, expected - part, rtol, atol):
            return "missing_part", f"leaves out device {d}'s contribution: the sum over the devices is one part short"
        if close(got, expected + part, rtol, atol):
            return "extra_part", f"counts device {d}'s contribution twice"
    return None


def _one_part_per_device(got, expected, parts, rtol, atol) -> tuple[str, str] | None:
    """Each device (row of the result) short of, or over by, one device's part, not the same one everywhere."""
    for sign, key, sentence in ((-1, "missing_part", "on every device leaves out one device's contribution "
                                                     "(device 0 misses device {k}'s): the sum is one part short"),
                                (1, "extra_part", "on every device counts one device's contribution twice "
                                                  "(device 0 adds device {k}'s once more)")):
        found = [next((k for k, part in enumerate(parts) if np.abs(part[j]).max(initial=0) > atol
                       and close(got[j], expected[j] + sign * part[j], rtol, atol)), None) for j in range(len(got))]
        if None not in found:
            return key, sentence.format(k=found[0])
    return None


def _shifted(got, expected, rtol, atol) -> tuple[str, str] | None:
    for shift, direction in ((1, "the device before it"), (-1, "the device after it")):
        if close(got, np.roll(expected, shift, axis=0), rtol, atol):
            return "shifted", f"holds on every device what {direction} should hold: the result is shifted by one device"
    return None


MISPLACED_MAX = 4096  # entries of one device's result compared with every entry of the answer (a square of bools)


def _runs(wrong: np.ndarray, matches: np.ndarray) -> list[tuple[int, int, int | None]]:
    """The wrong entries as runs (first, last, offset): consecutive entries that each equal the one entry of
    the answer ``offset`` places along (None: entries that equal none of the answer's). An entry whose value
    the answer holds at several entries (a zero, a repeated small integer) tells nothing and ends a run."""
    runs: list[tuple[int, int, int | None]] = []
    for i in np.flatnonzero(wrong):
        found = np.flatnonzero(matches[i])
        if len(found) > 1:
            continue
        offset = int(found[0]) - int(i) if len(found) else None
        if runs and runs[-1][1] == i - 1 and runs[-1][2] == offset:
            runs[-1] = (runs[-1][0], int(i), offset)
        else:
            runs.append((int(i), int(i), offset))
    return runs


def _entries(runs: list[tuple[int, int]]) -> str:
    """``entry 5 holds``, ``entries 4-7 hold``, ``entries 0-3, 9 hold``: the subject and its verb."""
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"entry {runs[0][0]} holds"
    return f"entries {ranges([i for a, b in runs for i in range(a, b + 1)])} hold"


def misplaced(got, expected, rtol: float = 1e-4, atol: float = 1e-5) -> str | None:
    """Where one device's result (``got``, against ``expected``, both flattened) is wrong, measured entry by
    entry: which runs of its entries hold the values the answer has at other entries ("entries 4-7 hold what
    entries 8-11 should"), and which hold values the answer has nowhere. None where every entry is right,
    or the result is too large to compare every pair."""
    g, e = np.asarray(got, np.float64).reshape(-1), np.asarray(expected, np.float64).reshape(-1)
    if g.size != e.size or g.size > MISPLACED_MAX:
        return None
    wrong = ~np.isclose(g, e, rtol=rtol, atol=atol)
    if not wrong.any():
        return None
    runs = _runs(wrong, np.isclose(g[:, None], e[None, :], rtol=rtol, atol=atol))
    moved = [(a, b, k) for a, b, k in runs if k is not None]
    nowhere = [(a, b) for a, b, k in runs if k is None]
    said = [f"{_entries([(a, b)])} what {_entries([(a + k, b + k)]).rsplit(' ', 1)[0]} should" for a, b, k in moved[:2]]
    if len(moved) > 2:
        said.append(f"{plural(len(moved) - 2, 'more run')} {'holds' if len(moved) == 3 else 'hold'} what other "
                    "entries should")
    if nowhere:
        one = len(nowhere) == 1 and nowhere[0][0] == nowhere[0][1]
        said.append(f"{_entries(nowhere)} {'a value' if one else 'values'} the answer has nowhere")
    if not said:
        return None
    count = "the one" if g.size == 1 else f"all {g.size}" if wrong.all() else f"{int(wrong.sum())} of the {g.size}"
    flat = " (flattened)" if np.ndim(got) > 1 else ""
    noun = "entry" if g.size == 1 else "entries"
    return f"{count} {noun}{flat} {'is' if wrong.sum() == 1 else 'are'} wrong: {'; '.join(said)}"


def _disagree(got, expected, rtol, atol) -> tuple[str, str] | None:
    if not all(close(row, expected[0], rtol, atol) for row in expected[1:]):
        return None  # the devices are not meant to agree
    other = next((d for d in range(1, len(got)) if not close(got[d], got[0], rtol, atol)), None)
    if other is None:
        return None
    fact = (f"differs between devices (device 0 and device {other} hold different values), but every device should "
            "hold the same value")
    wrong = next(d for d in range(len(got)) if not close(got[d], expected[d], rtol, atol))
    where = misplaced(got[wrong], expected[wrong], rtol, atol)
    return "disagree", fact + (f"; on device {wrong}, {where}" if where else "")


def _epsilon(got, expected, rtol, atol) -> tuple[str, str] | None:
    worst = float(np.max(np.abs(got - expected)))
    if close(got, expected, max(rtol, 1e-2), max(atol, 1e-3)):
        return "epsilon", f"is close to the answer but off by up to {worst:.2g}, more than the tolerance"
    return None


def find(got, expected, *, devices: int | None = None, parts=None, rows: tuple[int, int] | None = None,
         device_axis: bool = False, rtol: float = 1e-4, atol: float = 1e-5) -> tuple[str, str] | None:
    """(pattern, fact) for ``got`` (which is not ``expected``), or None when its difference has no pattern.

    ``devices``: the case's device count (enables n times and 1/n). ``parts``: what each device
    contributes, ``parts.sum(axis=0) == expected``. ``rows``: (real, padded) row counts of a mean over
    padded data. ``device_axis``: axis 0 of the result is one row per device (enables shifted and
    disagreeing devices).
    """
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or not np.isfinite(got).all() or close(got, expected, rtol, atol):
        return None
    parts = None if parts is None else np.asarray(parts, np.float64)
    if parts is not None:
        found = _one_part(got, expected, parts, rtol, atol)
        if found:
            return found
    if device_axis and got.ndim and len(got) > 1:
        found = ((parts is not None and _one_part_per_device(got, expected, parts, rtol, atol))
                 or _shifted(got, expected, rtol, atol) or _disagree(got, expected, rtol, atol))
        if found:
            return found
    c = factor(got, expected, rtol, atol)
    if c is not None:
        found = _factor_fact(c, expected, devices, rows, atol)
        if found:
            return found
    return _epsilon(got, expected, rtol, atol)


def recognise(got, expected, *, causes: dict | None = None, **patterns) -> str | None:
    """The fact :func:`find` verified, followed by the cause the suite declared for it, or None."""
    found = find(got, expected, **patterns)
    if found is None:
        return None
    key, fact = found
    return f"{fact}: {causes[key]}" if causes and causes.get(key) else fact
