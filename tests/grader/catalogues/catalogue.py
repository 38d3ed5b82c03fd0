"""Helpers for the catalogues of wrong submissions (tests/grader/catalogues/test_catalogue_*.py).

A wrong submission is a reference solution with one realistic mistake edited in (``mutate``) or a
module replaced; grading it must cost points on the task the mistake belongs to, at the device
counts where it shows, with a reason that names the mistake, and leave another task at full points.
"""

from __future__ import annotations

from conftest import ROOT, grade_json, task

DEVICES = "1,2,4"


def grade_tasks(submission, *task_ids: str, devices: str = DEVICES) -> dict:
    """The JSON report of grading only ``task_ids`` of exercise7 at ``devices``."""
    args = [arg for t in task_ids for arg in ("--task", t)]
    return grade_json(submission, *args, "--devices", devices)


def expect_full(report: dict, task_id: str) -> None:
    t = task(report, task_id)
    assert t["score"] == t["max_score"], f"{task_id} should keep full points: {t['reason']}"


def expect_mistake(report: dict, task_id: str, test: str, words: tuple[str, ...], devices: set[int]) -> None:
    """``test`` of ``task_id`` fails exactly at ``devices`` with a message containing every one of ``words``.

    For a parametrised test, only the failed cases whose message names ``words[0]`` count, so one
    submission can carry a mistake per parameter.
    """
    t = task(report, task_id)
    assert t["score"] < t["max_score"], f"{task_id} kept full points"
    failed = [c for c in t["cases"] if c["test"] == test and c["outcome"] != "passed" and words[0] in c["message"]]
    assert {c["devices"] for c in failed} == devices, (
        f"{test} should fail at {sorted(devices)} naming {words[0]!r}; failed cases: "
        f"{[(c['devices'], c['message']) for c in t['cases'] if c['outcome'] != 'passed']}")
    for c in failed:
        missing = [w for w in words if w not in c["message"]]
        assert not missing, f"{test} at {c['devices']} devices does not say {missing}: {c['message']}"


def check_wrong_submission(make_submission, task_id: str, other: str, source: str, mistakes) -> None:
    """Replace ``task_id``'s module of the solutions by ``source``, grade it with ``other``, check each mistake.

    ``mistakes`` lists (test, words, devices) as :func:`expect_mistake` takes them.
    """
    report = grade_tasks(make_submission({task_id: source}), task_id, other)
    for test, words, devices in mistakes:
        expect_mistake(report, task_id, test, words, devices)
    expect_full(report, other)


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
