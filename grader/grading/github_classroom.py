"""A report (``pmap-course/report`` v1) as the result of a GitHub Classroom autograding runner.

GitHub Classroom's grading reporter (``classroom-resources/autograding-grading-reporter``, read at
src/main.js and src/notify-classroom.js) takes, for each runner named in its ``runners`` input, the
environment variable ``<RUNNER>_RESULTS`` (the runner's name upper-cased): base64 of a JSON object
``{"version": 1, "status": "pass"|"fail"|"error", "max_score": N, "tests": [{"name", "status",
"score", "message", "test_code", "filename", "line_no", "duration"}]}``, as its stock graders write
it. The points it records are the sum of every test's ``score`` over the runners whose ``max_score``
is not 0, out of the sum of those ``max_score``.

The stock command grader gives a step all of its points or none. Here one runner stands for the
exercise and each task is one of its tests, scored as the report scores it: partial credit per task
is what GitHub Classroom records, and an extra-credit task's points add to the total without adding
to the maximum, as in every other report. (The reporter's own log line per runner counts passed
tests instead of points, so each test's name carries its points.)
"""

from __future__ import annotations

import base64
import json
import re

from grader.errors import STATUS
from grader.layout import number

VERSION = 1


def runner_name(exercise: str) -> str:
    """The runner's name for an exercise: letters and digits only, as the reporter's input allows."""
    return re.sub(r"[^A-Za-z0-9]", "", exercise) or "grade"


def results(report: dict) -> dict:
    """The runner's result for a JSON report."""
    tests = []
    for task in report["tasks"]:
        full = task["score"] >= task["max_score"] and task["status"] != STATUS["not_run"]
        extra = " extra credit" if task["extra_credit"] else ""
        tests.append({"name": f"{task['id']}: {number(task['score'], 2)} / {number(task['max_score'], 2)}{extra} points",
                      "status": "pass" if full else "fail", "score": task["score"],
                      "message": task["reason"] or task["status"], "test_code": "", "filename": "", "line_no": 0,
                      "duration": round(sum(c["duration_s"] for c in task["cases"]) * 1000)})
    passed = all(t["status"] == "pass" for t, task in zip(tests, report["tasks"]) if not task["extra_credit"])
    return {"version": VERSION, "status": "pass" if passed else "fail", "max_score": report["max_score"],
            "tests": tests}


def encoded(report: dict) -> str:
    """What a workflow step hands the reporter as its output: base64 of the result's JSON, one line."""
    return base64.b64encode(json.dumps(results(report)).encode()).decode() + "\n"
