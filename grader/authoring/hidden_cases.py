"""How many hidden cases each task has, counted when a release is made, without running anything.

The student bundle holds only the visible tests, so it cannot count what it does not have: the
release counts the other cases (a test at each device count of its task is one case per count, as
grading runs them) and records them in the bundle's course.yaml, and ``grade`` there says how many
are graded at submission.
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from grader.course import Course, Exercise
from grader.errors import UsageError
from grader.grading.plugin import CasePlan
from grader.grading.runner import own_plugins_only, pytest_args, suite_files


class _Counter(CasePlan):
    """Collects the suite, counts the cases whose test course.yaml does not call visible, runs none."""

    def __init__(self, exercise: Exercise):
        super().__init__(exercise)
        self.counts = {t.id: 0 for t in exercise.tasks}
        self.errors: list[str] = []

    @pytest.fixture
    def student(self, devices, processes):
        """Never set up (nothing runs); it makes a test's cases depend on devices and processes as in grading."""

    def pytest_collection_modifyitems(self, session, config, items):
        for item in items:
            task = self._task(item.path)
            if task is not None and task.rule(item.originalname).visibility != "visible":
                self.counts[task.id] += 1
        items[:] = []

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append(report.nodeid)


def hidden_cases(course: Course, exercise: Exercise) -> dict[str, int]:
    """task id -> how many of its cases are not visible."""
    counter = _Counter(exercise)
    files = suite_files(course, exercise)
    if files:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), own_plugins_only():
            pytest.main([*pytest_args(os.path.join(course.root, exercise.suite), files), "--collect-only"],
                        plugins=[counter])
    if counter.errors:
        raise UsageError(f"the suite of {exercise.name} could not be collected: {', '.join(counter.errors)}")
    return counter.counts
