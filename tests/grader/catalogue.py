"""Shared by the catalogues of wrong submissions (tests/grader/test_catalogue_*.py).

A wrong submission is a reference solution with one realistic mistake edited in; grading it must
cost points on the task the mistake belongs to, with a reason that names the mistake, and leave
another task at full points.
"""

from __future__ import annotations

from conftest import ROOT, grade_json, task


def mutate(module: str, *edits: tuple[str, str]) -> str:
    """solutions/exercise7/<module>.py with each (old, new) edit applied; old must occur exactly once."""
    source = (ROOT / "solutions" / "exercise7" / f"{module}.py").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"{old!r} does not occur exactly once in solutions/exercise7/{module}.py"
        source = source.replace(old, new)
    return source


def expect_caught(submission, wrong: str, intact: str, devices: str, reason: str) -> dict:
    """Grade tasks ``wrong`` and ``intact`` at ``devices``: the first loses points for ``reason``, the second none."""
    report = grade_json(submission, "--task", wrong, "--task", intact, "--devices", devices)
    lost, kept = task(report, wrong), task(report, intact)
    assert lost["score"] < lost["max_score"], f"{wrong} kept full points"
    assert reason in lost["reason"], f"{wrong}'s reason does not say {reason!r}: {lost['reason']}"
    assert kept["score"] == kept["max_score"], f"{intact} lost points: {kept['reason']}"
    return lost


def expect_full_marks(submission, task_id: str, devices: str) -> None:
    """A correct submission written another way than the reference keeps every point."""
    graded = task(grade_json(submission, "--task", task_id, "--devices", devices), task_id)
    assert graded["score"] == graded["max_score"], graded["reason"]
