"""A grading run's timeline, kept only when asked: what each process did when, and so what waits on what.

``GRADE_TIMELINE=PATH``, read by the grader process alone, makes a run write a JSON file of spans
(process, what, start, end) to PATH when the command ends; ``bench/timeline.py`` draws it. Times are
CLOCK_MONOTONIC seconds (``time.monotonic``), one clock for every process on a Linux machine, so the
grader places beside its own spans the moments its zygote and workers report in their ready
messages and replies, and the start of each process, read from /proc. A worker is confined and
writes nothing outside its scratch, so what it measured comes back on its pipe like everything
else; it runs student code, so those moments are drawn, never believed: nothing but this file
reads them, and a value that is not a number is left out.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

VARIABLE = "GRADE_TIMELINE"

_spans: list[dict] = []


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def enabled() -> bool:
    return bool(os.environ.get(VARIABLE))


def span(process: str, what: str, start, end=None) -> None:
    """Record that ``process`` did ``what`` from ``start`` to ``end`` (a moment when ``end`` is None)."""
    if not enabled() or not _number(start) or not (end is None or _number(end)):
        return
    _spans.append({"process": process, "what": str(what)[:200], "start": float(start),
                   "end": float(start if end is None else end)})


def reported(process: str, what: str, began, seconds) -> None:
    """Record a span a process reported as its start and length (ignored unless both are numbers)."""
    if _number(began) and _number(seconds):
        span(process, what, began, began + seconds)


@contextlib.contextmanager
def timed(process: str, what: str):
    """Record the ``with`` block as a span of ``process``."""
    began = time.monotonic()
    try:
        yield
    finally:
        span(process, what, began, time.monotonic())


def steps(process: str, moments, pid: int) -> None:
    """Record a process's reported moments ({step: time it ended}, in the order it passed them) as
    consecutive spans, each from the one before, the first from the start of process ``pid``."""
    if not enabled() or not isinstance(moments, dict):
        return
    last = started(pid)
    for what, when in moments.items():
        if not _number(when):
            continue
        span(process, what, when if last is None else last, when)
        last = when


def started(pid: int) -> float | None:
    """When process ``pid`` started, on the monotonic clock (to the kernel's clock tick), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            ticks = int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None
    since_boot = ticks / os.sysconf("SC_CLK_TCK")
    return since_boot - (time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic())


def write() -> None:
    """Write the spans to the file GRADE_TIMELINE names (no-op when unset), with this process's start."""
    path = os.environ.get(VARIABLE)
    if not path:
        return
    span("grader", "exit", time.monotonic())
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"started": started(os.getpid()), "spans": _spans}, f, indent=1)
