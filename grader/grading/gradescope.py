"""A report (``pmap-course/report`` v1, see :mod:`grader.grading.report`) as Gradescope's results.json.

Gradescope's autograder specification (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): a top-level ``score`` (it overrides the sum of the tests), optional
``execution_time`` (seconds), ``output``, ``visibility`` and ``stdout_visibility`` (visible, hidden,
after_due_date, after_published) and ``extra_data``; ``tests`` is a list of objects with ``score``,
``max_score``, ``status`` (passed or failed), ``name``, ``number``, ``output`` and ``visibility``.

One Gradescope test per (task, test function): its cases (device counts, parameters) are summed,
so the tests of a task add up to the task's score (unrounded, so the sum is exact). Each test keeps
the visibility course.yaml gives it. Tests of an extra-credit task have max_score 0, which is how
Gradescope counts points on top of the maximum. The top-level output names only totals, never a test's reason (hidden tests would show through),
and the run's stdout (the full text report) is for instructors only. Every output is terminal text
(grader.grading.sanitise.terminal): Gradescope can show output as ANSI, where a student's escape sequence
would be drawn.
"""

from __future__ import annotations

import json
import os

from grader.layout import plural, summary
from grader.grading.sanitise import terminal

STDOUT_VISIBILITY = "hidden"


def _test_output(task: dict, cases: list[dict]) -> str:
    """What went wrong, once per distinct reason, with the device counts it happened at."""
    counted = [c for c in cases if c["outcome"] != "skipped"]
    if not counted:
        return "not run here: " + (cases[0]["message"] or "no device configuration for it")
    failed = [c for c in counted if c["outcome"] != "passed"]
    if not failed:
        return f"passed ({plural(len(counted), 'case')}, on {summary((c['devices'], c.get('processes')) for c in counted)})"
    reasons: dict[str, list] = {}
    for c in failed:
        reason = c["message"] + (f" ({c['where']})" if c["where"] else "")
        reasons.setdefault(reason, []).append((c["devices"], c.get("processes")))
    lines = [f"failed {len(failed)} of {plural(len(counted), 'case')}:"]
    for reason, where in reasons.items():
        at = f"[{summary(where)}] " if summary(where) else ""
        lines.append(f"- {at}{reason}")
    if task.get("hint"):
        lines.append(f"hint: {task['hint']}")
    shown = next((c for c in failed if c.get("feedback")), None)  # what the program communicated, where data lived
    for note in shown["feedback"] if shown else ():
        lines += note["text"]
    return "\n".join(lines)


def _task_tests(task: dict, number: int) -> list[dict]:
    by_test: dict[str, list[dict]] = {}
    for case in task["cases"]:
        by_test.setdefault(case["test"], []).append(case)
    total_weight = sum(c["weight"] for c in task["cases"] if c["outcome"] != "skipped")
    tests = []
    for i, (name, cases) in enumerate(by_test.items(), 1):
        counted = [c for c in cases if c["outcome"] != "skipped"]
        share = task["max_score"] / total_weight if total_weight else 0.0
        entry = {
            "name": f"{task['id']}: {name}" + (" (extra credit)" if task["extra_credit"] else ""),
            "number": f"{number}.{i}",
            "score": share * sum(c["weight"] for c in counted if c["outcome"] == "passed"),
            "max_score": 0.0 if task["extra_credit"] else share * sum(c["weight"] for c in counted),
            "output": terminal(_test_output(task, cases)),
            "visibility": cases[0]["visibility"],
        }
        if counted:
            entry["status"] = "passed" if all(c["outcome"] == "passed" for c in counted) else "failed"
        tests.append(entry)
    return tests


def results(report: dict) -> dict:
    """Gradescope's results.json for one graded submission."""
    tests = [t for n, task in enumerate(report["tasks"], 1) for t in _task_tests(task, n)]
    summary = [f"{report['exercise']}: {report['score']:g} / {report['max_score']:g} points "
               f"(seed {report['seed']}, jax {report['jax_version']})"]
    summary += [f"{task['id']}: {task['score']:g} / {task['max_score']:g}" for task in report["tasks"]]
    summary += report.get("notes", [])
    return {
        "score": report["score"],
        "execution_time": round(report["timing"]["wall_s"]),
        "output": terminal("\n".join(summary)),
        "visibility": "visible",
        "stdout_visibility": STDOUT_VISIBILITY,
        "tests": tests,
        "extra_data": {"schema": report["schema"], "schema_version": report["schema_version"],
                       "grader_version": report["grader_version"], "seed": report["seed"],
                       "sandbox": report.get("sandbox", {})},
    }


def failure_results(message: str) -> dict:
    """results.json when nothing could be graded: zero points and one sentence saying why."""
    return {"score": 0.0, "output": terminal(message), "visibility": "visible", "stdout_visibility": STDOUT_VISIBILITY,
            "tests": []}


def write(path: str, results: dict) -> None:
    """Write ``results`` as Gradescope's results.json at ``path`` (its folder is made if needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
