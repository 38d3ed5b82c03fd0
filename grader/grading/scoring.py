"""From cases to points, by the rubric in course.yaml.

A task's score is its points times the weighted fraction of its cases that passed (a test run at
four device counts is four cases, each with the test's weight). Cases not run on this machine (too
few real devices) count on neither side: they lower the task's maximum by their share of its
weight, and the report says so. The first failure gives the task's status and reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from grader.course import Exercise, Task
from grader.errors import STATUS
from grader.grading.case import Case
from grader.grading.functions import named_function
from grader.suite.differences import device_count_disproved

UNFINISHED = ("not reached", "interrupted")  # statuses of the tasks an interrupted run did not finish


@dataclass
class TaskScore:
    task: Task
    score: float
    max_score: float
    status: str
    reason: str = ""
    cases: list[Case] = field(default_factory=list)
    other_failures: list[str] = field(default_factory=list)  # the first failure of each other broken function
    led_by: Case | None = None  # the failed case the report leads with (headline), whose pictures it shows

    @property
    def passed(self) -> int:
        return sum(c.outcome == "passed" for c in self.cases)

    @property
    def counted(self) -> int:
        return sum(c.outcome != "skipped" for c in self.cases)

    @property
    def not_run(self) -> list[Case]:
        return [c for c in self.cases if c.outcome == "skipped"]

    @property
    def unfinished(self) -> bool:
        return self.status in UNFINISHED

    @property
    def cut_short(self) -> int:
        """Cases failed without running: an earlier one timed out at the same layout (grading/budget.py)."""
        return sum(c.cut_short for c in self.cases)


@dataclass
class Score:
    tasks: list[TaskScore]

    @property
    def total(self) -> float:
        return sum(t.score for t in self.tasks)

    @property
    def max_total(self) -> float:
        return sum(t.max_score for t in self.tasks if not t.task.extra_credit)

    @property
    def full_max_total(self) -> float:
        """The maximum had every case run here."""
        return sum(t.task.points for t in self.tasks if not t.task.extra_credit)

    @property
    def scaled(self) -> bool:
        return self.max_total < self.full_max_total

    @property
    def percent(self) -> float:
        return 100.0 * self.total / self.max_total if self.max_total else 0.0

    @property
    def extra(self) -> float:
        """The points of extra-credit tasks: beyond the maximum, never part of it."""
        return sum(t.score for t in self.tasks if t.task.extra_credit)

    def points_text(self, points=lambda x: f"{x:g}") -> str:
        """"12 / 15", "12 / 15 + 5 extra credit", or "5 extra credit" where only extra credit was graded."""
        extra = f"{points(self.extra)} extra credit"
        if not self.max_total and any(t.task.extra_credit for t in self.tasks):
            return extra
        return f"{points(self.total - self.extra)} / {points(self.max_total)}" + (f" + {extra}" if self.extra else "")


def _reason(case: Case) -> str:
    reason = f"[{case.label}] {case.message}" if case.label else case.message
    return reason + (f" ({case.where})" if case.where else "")


def _other_failures(failed: list[Case], first: Case, functions: tuple[str, ...]) -> list[str]:
    """The first failure of each function the task's headline failure ``first`` is not about, in the cases'
    order."""
    if not functions:
        return []
    seen, others = {named_function(first.message, functions)}, []
    for case in failed:
        function = named_function(case.message, functions)
        if function and function not in seen:
            seen.add(function)
            others.append(_reason(case))
    return others


def headline(failed: list[Case]) -> Case:
    """The failure a task's report leads with: among the failed cases whose messages measured the most
    (Case.told: a difference, over a factor two mesh axes share, over only where values differ), the first
    failing test's, at its first case on more than one device where it has one. On one device every
    collective is the identity, so a mistake in how the work is split shows there only in a degenerate form
    ("2 times the answer", "0 at every entry") that the same test on two devices measures as what it is
    ("counts x's block 0 twice")."""
    told = max(c.told for c in failed)
    most = [c for c in failed if c.told == told]
    test = [c for c in most if c.test == most[0].test]
    return next((c for c in test if (c.devices or 1) > 1 and c.kind == most[0].kind), most[0])


def _status(task_cases: list[Case], failed: list[Case], first: Case | None, score: float) -> tuple[str, str]:
    counted = [c for c in task_cases if c.outcome != "skipped"]
    if not task_cases:
        return "no tests", ""
    if not counted:
        return "not run here", task_cases[0].message
    if first is None:
        return "passed", ""
    reason = _reason(first)
    if all(c.kind == "not_started" for c in failed) and len(failed) == len(counted):
        return "not started", reason
    if score > 0:
        return "partial", reason
    return STATUS.get(first.kind, "failed"), reason


def _same(case: Case) -> str:
    """The case but for its device count: "test_x[2dev-f]" and "test_x[4dev-f]" are one."""
    return re.sub(r"(?<=[\[-])\d+dev-?", "", case.nodeid)


def _across_counts(cases: list[Case]) -> list[Case]:
    """The cases, each failure's message checked against the same test's failures at the other device counts: a
    factor one case names as the device count and another count measured too is not the count."""
    failed: dict[str, dict] = {}
    for c in cases:
        if c.outcome == "failed" and c.devices is not None and not c.processes:
            failed.setdefault(_same(c), {})[c.devices] = c.message
    return [replace(c, message=device_count_disproved(c.message, c.devices, failed[_same(c)]))
            if c.outcome == "failed" and _same(c) in failed and not c.processes else c for c in cases]


def _all_counts(task: Task, cases: list[Case]) -> list[Case]:
    """The cases, each passed case of a test whose points need every device count (course.yaml's ``all_counts``)
    failed where the same test failed at another count, with that failure's message: its claim is about the
    program, and a program that holds the asked-for structure only at some counts (one that reads the device count
    while it is traced) does not make it. Such a case measured nothing itself, so a report never leads with it."""
    failing = {}
    for c in cases:
        if c.outcome == "failed" and task.rule(c.test).all_counts:
            failing.setdefault(_same(c), c)
    return [replace(c, outcome="failed", kind=f.kind, told=-1, feedback=[],
                    message=f"passes here, but its points need every device count, and on {f.label}: {f.message}")
            if c.outcome == "passed" and (f := failing.get(_same(c))) else c for c in cases]


def score_task(task: Task, cases: list[Case], functions: tuple[str, ...] = ()) -> TaskScore:
    """The task's score, status and first failure; with ``functions`` (the ones the task asks for), also the
    first failure of each other broken function."""
    cases = _all_counts(task, _across_counts(cases))
    full_weight = sum(task.rule(c.test).weight for c in cases)
    counted_weight = sum(task.rule(c.test).weight for c in cases if c.outcome != "skipped")
    passed_weight = sum(task.rule(c.test).weight for c in cases if c.outcome == "passed")
    share = counted_weight / full_weight if full_weight else 1.0
    score = task.points * passed_weight / full_weight if full_weight else 0.0
    failed = [c for c in cases if c.outcome == "failed"]
    costly = [c for c in failed if task.rule(c.test).weight > 0]  # a test of weight 0 is feedback only
    first = headline(costly or failed) if failed else None
    status, reason = _status(cases, costly, first if costly else None, score)
    if failed and not costly:
        reason = _reason(first)  # passed, with the feedback shown
    return TaskScore(task=task, score=round(score, 4), max_score=round(task.points * share, 4),
                     status=status, reason=reason, cases=cases, led_by=first,
                     other_failures=_other_failures(failed, first, functions) if first and status != "not started"
                     else [])


def unfinished_task(task: Task, cases: list[Case]) -> TaskScore:
    """A task an interrupted run did not finish: no points, whatever its first cases did."""
    return TaskScore(task=task, score=0.0, max_score=task.points, status=UNFINISHED[1] if cases else UNFINISHED[0],
                     cases=cases)


def score(exercise: Exercise, cases: list[Case], unfinished: tuple[str, ...] = (),
          functions: dict[str, tuple[str, ...]] | None = None) -> Score:
    """The score of ``exercise``'s tasks (the graded ones: see Exercise.only); ``unfinished`` tasks of an
    interrupted run score nothing and say so; ``functions``: task id -> the functions it asks for
    (grader.grading.functions), so each broken one's first failure is shown."""
    functions = functions or {}
    return Score([unfinished_task(t, [c for c in cases if c.task == t.id]) if t.id in unfinished else
                  score_task(t, [c for c in cases if c.task == t.id], functions.get(t.id, ()))
                  for t in exercise.tasks])
