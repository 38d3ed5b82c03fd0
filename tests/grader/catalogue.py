"""Helpers for the catalogues of wrong submissions: grade a few tasks, then read who failed where and why.

A catalogue test builds a submission from the solutions with one module replaced by a realistic
mistake, grades the task it belongs to and one other task, and checks three things: the mistake
costs points on its task, at the device counts where it shows, with a message that names it; the
other task keeps full points.
"""

from __future__ import annotations

from conftest import grade_json, task

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
