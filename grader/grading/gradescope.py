"""A report (``pmap-course/report`` v1, see :mod:`grader.grading.report`) as Gradescope's results.json.

Gradescope's autograder specification (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): a top-level ``score`` (it overrides the sum of the tests), optional
``execution_time`` (seconds), ``output``, ``visibility`` and ``stdout_visibility`` (visible, hidden,
after_due_date, after_published) and ``extra_data``; ``tests`` is a list of objects with ``score``,
``max_score``, ``status`` (passed or failed), ``name``, ``number``, ``output`` and ``visibility``.

One Gradescope test per (task, test function): its cases (device counts, parameters) are summed,
so the tests of a task add up to the task's score (unrounded, so the sum is exact). Each test keeps
the visibility course.yaml gives it. Tests of an extra-credit task have max_score 0, which is how
Gradescope counts points on top of the maximum.

Gradescope shows a student each test only at its visibility (``hidden`` never, ``after_due_date`` and
``after_published`` from then on), but the top-level ``output`` always. So that output follows the
tests: while any test is not ``visible`` it says only what the visible tests earned, task by task,
and neither the total nor any task's full score (a hidden test's points would show through the
difference); it never names a test's reason. The run's stdout (the full text report) is for
instructors only. Every output is plain text, said so with ``output_format``, ``test_output_format``
and ``test_name_format`` ``text`` (Gradescope's default renders HTML, where a marker such as
``<img src=x>`` in a notebook would be drawn), and shown through grader.grading.sanitise.terminal.

A report with a ``late`` record (a batch's deadline, see grader.classroom.deadlines) scores the
penalised score, and the output says how much was taken off (in points only while every test is
visible).
"""

from __future__ import annotations

import json
import os

from grader.layout import plural, summary
from grader.grading.sanitise import terminal

STDOUT_VISIBILITY = "hidden"
VISIBLE = "visible"
TEXT = {"output_format": "text", "test_output_format": "text", "test_name_format": "text"}


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


def task_tests(task: dict, number: int) -> list[dict]:
    """One test per test function of ``task`` (numbered ``number.i``), its cases summed (PrairieLearn's
    writer lists the same tests)."""
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
            "output_format": "text",
            "name_format": "text",
            "visibility": cases[0]["visibility"],
        }
        if counted:
            entry["status"] = "passed" if all(c["outcome"] == "passed" for c in counted) else "failed"
        tests.append(entry)
    return tests


def _late_line(late: dict, in_points: bool) -> list[str]:
    if not late or not late["days_late"]:
        return []
    days = plural(late["days_late"], "day")
    points = f", {late['raw_score']:g} -> {late['score']:g} points" if in_points else " of the total"
    return [f"Submitted {days} after the deadline: {late['penalty_percent']:g}% off{points}."]


def _summary(report: dict, tests: list[dict]) -> list[str]:
    """The top-level output: totals while every test is visible, else only what the visible tests earned."""
    run = f"(seed {report['seed']}, jax {report['jax_version']})"
    shown = [t for t in tests if t["visibility"] == VISIBLE]
    late = report.get("late")
    if len(shown) == len(tests):
        lines = [f"{report['exercise']}: {report['score']:g} / {report['max_score']:g} points {run}"]
        lines += [f"{task['id']}: {task['score']:g} / {task['max_score']:g}" for task in report["tasks"]]
        return lines + _late_line(late, in_points=True)
    own = {task["id"]: [t for t in shown if t["name"].startswith(f"{task['id']}: ")] for task in report["tasks"]}
    extra = sum(t["score"] for task in report["tasks"] if task["extra_credit"] for t in own[task["id"]])
    regular = [t for task in report["tasks"] if not task["extra_credit"] for t in own[task["id"]]]
    earned = f"{sum(t['score'] for t in regular):g} of their {sum(t['max_score'] for t in regular):g} points"
    lines = [f"{report['exercise']}: the visible tests earned {earned}" + (f" and {extra:g} extra" if extra else "")
             + f" {run}",
             f"{plural(len(tests) - len(shown), 'test')} more, and the total, are shown when the course releases them."]
    for task in report["tasks"]:
        if not own[task["id"]]:
            continue
        got = sum(t["score"] for t in own[task["id"]])
        lines.append(f"{task['id']}: {got:g} extra-credit points in the visible tests" if task["extra_credit"] else
                     f"{task['id']}: {got:g} / {sum(t['max_score'] for t in own[task['id']]):g} in the visible tests")
    return lines + _late_line(late, in_points=False)


def results(report: dict) -> dict:
    """Gradescope's results.json for one graded submission."""
    tests = [t for n, task in enumerate(report["tasks"], 1) for t in task_tests(task, n)]
    late = report.get("late")
    return {
        "score": late["score"] if late else report["score"],
        "execution_time": round(report["timing"]["wall_s"]),
        "output": terminal("\n".join(_summary(report, tests) + report.get("notes", []))),
        **TEXT,
        "visibility": VISIBLE,
        "stdout_visibility": STDOUT_VISIBILITY,
        "tests": tests,
        "extra_data": {"schema": report["schema"], "schema_version": report["schema_version"],
                       "grader_version": report["grader_version"], "seed": report["seed"],
                       "sandbox": report.get("sandbox", {})},
    }


def failure_results(message: str) -> dict:
    """results.json when nothing could be graded: zero points and one sentence saying why."""
    return {"score": 0.0, "output": terminal(message), **TEXT, "visibility": VISIBLE,
            "stdout_visibility": STDOUT_VISIBILITY, "tests": []}


def write(path: str, results: dict) -> None:
    """Write ``results`` as Gradescope's results.json at ``path`` (its folder is made if needed)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
