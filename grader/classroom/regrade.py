"""Regrade only what changed: which tasks of a stored result still stand, and joining a grading of
the others into it.

Every graded report in a gradebook carries ``task_fingerprints`` (see :mod:`.fingerprint`). A
result is kept whole while the submission is unchanged and every graded task's fingerprint still
matches; when only some differ (a fixed test, a new device count for one task) the submission is
graded again for those tasks alone, and the fresh task results replace the stale ones. The totals
are recomputed from the task results the way the grading run computes them.
"""

from __future__ import annotations

from grader.classroom.gradebook import FAILED, GRADED, Result

FINGERPRINTS = "task_fingerprints"


def stale(previous: Result | None, submission_hash: str, course_hash: str, fingerprints: dict[str, str],
          forced: set[str]) -> list[str] | None:
    """The task ids to grade again: None for the whole submission, [] when the result stands."""
    if previous is None or previous.submission_hash != submission_hash:
        return None
    if previous.status != GRADED:
        return [] if previous.status != FAILED and previous.course_hash == course_hash else None
    stored = previous.report.get(FINGERPRINTS, {})
    if set(stored) - set(fingerprints):
        return None  # graded with tasks this batch leaves out: its totals would count them
    todo = [t for t, fp in fingerprints.items() if stored.get(t) != fp or t in forced]
    return None if len(todo) == len(fingerprints) else todo


def stamp(report: dict, fingerprints: dict[str, str]) -> dict:
    """A fresh report with the fingerprints of the tasks it graded."""
    return dict(report, **{FINGERPRINTS: {t["id"]: fingerprints[t["id"]] for t in report["tasks"]}})


def join(previous: dict, fresh: dict, order: list[str]) -> dict:
    """``fresh`` (a grading of some tasks) with the other tasks of ``order`` taken from ``previous``."""
    by_id = {t["id"]: t for t in previous["tasks"]}
    by_id.update({t["id"]: t for t in fresh["tasks"]})
    tasks = [by_id[t] for t in order]
    fingerprints = {**previous[FINGERPRINTS], **fresh[FINGERPRINTS]}
    score = round(sum(t["score"] for t in tasks), 4)
    max_score = round(sum(t["max_score"] for t in tasks if not t["extra_credit"]), 4)
    return dict(fresh, tasks=tasks, score=score, max_score=max_score,
                full_max_score=sum(t["points"] for t in tasks if not t["extra_credit"]),
                percent=round(100.0 * score / max_score if max_score else 0.0, 2),
                reused_tasks=[t for t in order if t not in {f["id"] for f in fresh["tasks"]}],
                **{FINGERPRINTS: {t: fingerprints[t] for t in order}})


def describe(partial: list[tuple[str, ...]], kept: int, full: int) -> str:
    """One line for the summary: results reused whole, tasks graded again alone, submissions graded in
    full. ``partial`` holds the tasks graded again for each submission graded in part."""
    counts: dict[str, int] = {}
    for tasks in partial:
        for t in tasks:
            counts[t] = counts.get(t, 0) + 1
    again = "".join(f"; task {t} graded again for {n} (their other tasks reused)" for t, n in counts.items())
    return f"reused {kept} results whole{again}; {full} graded in full"
