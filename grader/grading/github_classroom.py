"""A report (``pmap-course/report`` v1) as the results of GitHub Classroom autograding runners.

GitHub Classroom's grading reporter (``classroom-resources/autograding-grading-reporter``, read at
src/main.js, src/notify-classroom.js, src/console-results.js and src/helpers/test-helpers.js) takes, for
each runner named in its ``runners`` input, the environment variable ``<RUNNER>_RESULTS`` (the runner's
name upper-cased): base64 of a JSON object ``{"version": 1, "status": "pass"|"fail"|"error",
"max_score": N, "tests": [{"name", "status", "score", "message", "test_code", "filename", "line_no",
"duration"}]}``. It counts points twice, and the two agree only in one case:

- what GitHub Classroom records (notify-classroom.js): the sum of every test's ``score`` over the
  runners whose ``max_score`` is not 0, out of the sum of those ``max_score``;
- what its log prints per runner and in its table (``getTestScore``): the share of the runner's
  tests whose status is ``pass``, times the runner's ``max_score``.

Both are the same number when every test of a runner is worth the same points and scores all of
them or none. So each test here is one case (a test function at a device count), scoring its
points when it passed, and the cases are grouped into one runner per task and weight (course.yaml's
``weight`` of the test): ``dotw1`` holds dot's cases of weight 1, ``dotw2`` those of weight 2. The
release writes the workflow with the runners the public suite makes (:func:`release_runners`).

An extra-credit task's runners have ``max_score`` 0, which the reporter counts on neither side: a
total above 100 % cannot be recorded by GitHub Classroom without the log saying another total, so
the log lists extra-credit cases and Classroom records the regular points only (the instructor's
``grade batch`` counts the extra credit).
"""

from __future__ import annotations

import base64
import json
import re

from grader.errors import UsageError
from grader.grading.sanitise import line, terminal
from grader.layout import number, summary

VERSION = 1


def runner_name(task: str, weight: float) -> str:
    """The runner of a task's cases of one weight: letters and digits only, as the reporter's input allows."""
    return (re.sub(r"[^A-Za-z0-9]", "", task) or "task").lower() + "w" + f"{weight:g}".replace(".", "p")


def release_runners(tasks: list[tuple[str, list[float]]]) -> list[str]:
    """The runners a workflow names, from each task's id and the weights of its public tests; two tasks whose ids
    reduce to one name (``dot_1`` and ``dot1``) are refused, since the reporter would keep only one of them."""
    names = [runner_name(task, w) for task, weights in tasks for w in sorted(set(weights))]
    taken = sorted({name for name in names if names.count(name) > 1})
    if taken:
        raise UsageError(f"GitHub Classroom's runner names allow letters and digits only, so two tasks share the "
                         f"runner {', '.join(taken)}: rename one of them in course.yaml")
    return names


def _case_test(task: dict, case: dict, points: float) -> dict:
    where = summary([(case["devices"], case.get("processes"))])
    passed = case["outcome"] == "passed"
    return {"name": f"{task['id']}: {case['test']}" + (f" [{where}]" if where else "")
                    + f" ({number(points, 2)} point{'' if points == 1 else 's'})",
            "status": "pass" if passed else "fail", "score": points if passed else 0.0,
            "message": "" if passed else terminal(case["message"]), "test_code": "", "filename": "", "line_no": 0,
            "duration": round(case["duration_s"] * 1000)}


def runners(report: dict) -> dict[str, dict]:
    """Each runner's result for a JSON report, by runner name, in the task's order."""
    out: dict[str, dict] = {}
    for task in report["tasks"]:
        counted = [c for c in task["cases"] if c["outcome"] != "skipped"]
        share = task["max_score"] / sum(c["weight"] for c in counted) if counted else 0.0
        for weight in sorted({c["weight"] for c in task["cases"]}):
            mine = [c for c in counted if c["weight"] == weight]
            tests = [_case_test(task, c, share * weight) for c in mine]
            if not tests:  # every case skipped here: one line saying so, worth nothing on either side
                skipped = next(c for c in task["cases"] if c["weight"] == weight)
                tests = [{"name": f"{task['id']}: not run here: {line(skipped['message'] or 'no device configuration')}",
                          "status": "pass", "score": 0.0, "message": "", "test_code": "", "filename": "",
                          "line_no": 0, "duration": 0}]
            failed = any(t["status"] == "fail" for t in tests)
            out[runner_name(task["id"], weight)] = {
                "version": VERSION, "status": "fail" if failed and not task["extra_credit"] else "pass",
                "max_score": 0.0 if task["extra_credit"] else sum(share * weight for _ in mine), "tests": tests}
    return out


def encoded(report: dict) -> str:
    """What the workflow's grade step appends to ``$GITHUB_OUTPUT``: ``<runner>=<base64 of its JSON>``, a
    line per runner, each read by the reporter step as ``steps.grade.outputs.<runner>``."""
    return "".join(f"{name}={base64.b64encode(json.dumps(result).encode()).decode()}\n"
                   for name, result in runners(report).items())
