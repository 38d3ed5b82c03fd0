"""A report (``pmap-course/report`` v1) as the results.json of a PrairieLearn external grader.

PrairieLearn's external grading contract (docs/externalGrading.md in PrairieLearn, "The Grading
Process" and "Grading results"): the entrypoint finds the student's files in ``/grade/student`` and
must write ``/grade/results/results.json`` (making ``/grade/results`` itself), at most 1 MB. A gradable
result needs ``score``, a number in [0, 1]; ``"gradable": false`` marks the submission invalid (no
points, no attempt used) with ``format_errors`` saying why; ``message``, ``output`` and ``tests``
(``name``, ``description``, ``points``, ``max_points``, ``message``, ``output``) are what the
``<pl-external-grader-results>`` element shows.

One PrairieLearn test per (task, test function), its points its share of the task's, as for
Gradescope (:mod:`grader.grading.gradescope`). PrairieLearn shows every test at once and has no
visibility of its own, so a test course.yaml does not make ``visible`` is listed by its points only
(named "hidden test", no message or output): the score shows its points anyway, never its reason.
The score is the report's fraction of the maximum, at most 1: extra credit beyond the maximum is
not recorded (PrairieLearn's range). Every text is plain text through grader.grading.sanitise.terminal
(the element escapes it).
"""

from __future__ import annotations

import json
import os

from grader.grading.gradescope import task_tests
from grader.grading.sanitise import terminal

MAX_BYTES = 1 << 20
HIDDEN = "hidden test"


def _test(test: dict, task: dict) -> dict:
    shown = test["visibility"] == "visible"
    return {"name": test["name"] if shown else f"{task['id']}: {HIDDEN}", "description": terminal(task["title"]),
            "points": test["score"], "max_points": test["max_score"],
            "message": test.get("status", "not run") if shown else "",
            "output": test["output"] if shown else ""}


def results(report: dict) -> dict:
    """PrairieLearn's results.json for one graded submission."""
    tests = [_test(t, task) for n, task in enumerate(report["tasks"], 1) for t in task_tests(task, n)]
    fraction = report["score"] / report["max_score"] if report["max_score"] else 0.0
    extra = " (extra credit above the maximum is not counted here)" if fraction > 1 else ""
    return {"gradable": True, "score": max(0.0, min(1.0, fraction)),
            "message": terminal(f"{report['exercise']}: {report['score']:g} / {report['max_score']:g} points{extra}"),
            "output": terminal("\n".join(report.get("notes", []))), "tests": tests}


def failure_results(message: str) -> dict:
    """results.json when nothing could be graded: not gradable (no attempt used), with the reason."""
    return {"gradable": False, "format_errors": [terminal(message)], "message": terminal(message), "tests": []}


def write(path: str, data: dict) -> None:
    """Write ``data`` as results.json at ``path`` (its folder made, as the contract asks); output beyond the
    1 MB limit is cut from the tests' outputs first."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = json.dumps(data, indent=2)
    if len(text.encode()) > MAX_BYTES:
        data = {**data, "tests": [dict(t, output=t["output"][:2000]) for t in data.get("tests", [])]}
        text = json.dumps(data, indent=2)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
