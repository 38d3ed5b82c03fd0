"""The time budget of a task at one layout: one hang, then the task's other cases there fail at once.

An endless loop or a stuck collective in a student's function makes every call to it wait the full
per-call limit; twenty cases of a task at four device counts would keep a student waiting for
twenty limits. The first hang already says what is wrong, so the task's remaining cases at that
layout are not run: they fail with the first hang's reason and are marked cut short, so the report
can say how many were. Other layouts and other tasks are graded as usual.
"""

from __future__ import annotations

from grader.errors import StudentFailure
from grader.layout import Layout

HANGS = ("timeout", "deadlock")  # failures that cost (most of) a time limit each time they recur


class TimeBudget:
    def __init__(self):
        self._first: dict[tuple[str, Layout], StudentFailure] = {}

    def charge(self, task_id: str, layout: Layout, kind: str, message: str, where: str | None) -> None:
        """Record a failed case of ``task_id`` at ``layout``; a hang spends the budget there."""
        if kind in HANGS:
            self._first.setdefault((task_id, layout), StudentFailure(kind, message, where))

    def spent(self, task_id: str, layout: Layout) -> StudentFailure | None:
        """The failure a case of ``task_id`` at ``layout`` gets without running, or None if it may run."""
        first = self._first.get((task_id, layout))
        return None if first is None else StudentFailure(first.kind, first.message, first.where)
