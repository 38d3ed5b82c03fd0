"""Grades in the forms other tools read: CSV for spreadsheets and LMSs, Gradescope's results.json,
JUnit XML for CI test reporters, and plain JSON.

Everything here works from JSON reports (schema ``pmap-course/report``) and gradebook results, so a
single run (``grade EXERCISE --format gradescope``) and a gradebook export write the same thing.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

from grader.gradebook import FAILED, GRADED, Gradebook, Result

GRADEBOOK_SCHEMA = "pmap-course/gradebook"
GRADEBOOK_SCHEMA_VERSION = 1


def _num(x: float) -> str:
    return f"{round(x, 4):g}"


def _case_reason(case: dict) -> str:
    where = f" ({case['where']})" if case.get("where") else ""
    label = f"[{case['devices']} device{'s' if case['devices'] != 1 else ''}] " if case.get("devices") else ""
    return f"{label}{case['message']}{where}"


def _by_test(cases: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for case in cases:
        groups.setdefault(case["test"], []).append(case)
    return groups


def _gradescope_test(task: dict, name: str, cases: list[dict], share: float, number: str) -> dict:
    counted = [c for c in cases if c["outcome"] != "skipped"]
    passed = [c for c in counted if c["outcome"] == "passed"]
    failed = [c for c in counted if c["outcome"] != "passed"]
    if failed:
        output = f"{_case_reason(failed[0])}\npassed {len(passed)} of {len(counted)} cases"
        output += f"\nhint: {task['hint']}" if task.get("hint") else ""
    elif counted:
        output = f"passed all {len(counted)} cases"
    else:
        output = "not run on this machine: " + (cases[0]["message"] if cases else "no cases")
    max_score = share * sum(c["weight"] for c in counted)
    return {
        "name": f"{task['id']}: {name}",
        "number": number,
        "score": round(share * sum(c["weight"] for c in passed), 4),
        "max_score": 0.0 if task["extra_credit"] else round(max_score, 4),
        "status": "passed" if counted and not failed else "failed",
        "output": output,
        "visibility": cases[0]["visibility"],
    }


def gradescope_results(report: dict) -> dict:
    """Gradescope's results.json for one graded submission: one test per (task, hidden test).

    A test's points are its share of the task's points (its cases' weights over the task's);
    an extra-credit task's tests have max_score 0, which Gradescope counts as extra credit.
    Visibility comes from course.yaml, in Gradescope's own words.
    """
    tests = []
    for i, task in enumerate(report["tasks"], 1):
        counted_weight = sum(c["weight"] for c in task["cases"] if c["outcome"] != "skipped")
        share = task["max_score"] / counted_weight if counted_weight else 0.0
        groups = _by_test(task["cases"])
        for j, (name, cases) in enumerate(groups.items(), 1):
            tests.append(_gradescope_test(task, name, cases, share, f"{i}.{j}"))
        if not groups:
            tests.append({"name": task["id"], "number": f"{i}.1", "score": task["score"],
                          "max_score": 0.0 if task["extra_credit"] else task["max_score"], "status": "failed",
                          "output": task["reason"] or task["status"], "visibility": "visible"})
    return {
        "score": report["score"],
        "execution_time": round(report["timing"]["wall_s"]),
        "output": (f"{report['course']} {report['exercise']}: {_num(report['score'])} / "
                   f"{_num(report['max_score'])}, seed {report['seed']} "
                   f"(reproduce: grade {report['exercise']} --seed {report['seed']})"),
        "tests": tests,
    }


def gradescope_refusal(result: Result) -> dict:
    """results.json for a submission that got no score: zero, and the reason where students see it."""
    return {"score": 0.0, "output": f"This submission could not be graded: {result.error}", "tests": []}


def _junit_suite(parent: ET.Element, name: str, report: dict | None, error: str) -> dict:
    suite = ET.SubElement(parent, "testsuite", name=name)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    if report is None:
        case = ET.SubElement(suite, "testcase", classname=name, name="submission", time="0")
        ET.SubElement(case, "error", message=error, type="not graded").text = error
        counts.update(tests=1, errors=1)
    else:
        for task in report["tasks"]:
            for c in task["cases"]:
                case = ET.SubElement(suite, "testcase", classname=f"{name}.{task['id']}",
                                     name=c.get("name") or c["test"], time=f"{c['duration_s']:.3f}")
                counts["tests"] += 1
                counts["time"] += c["duration_s"]
                if c["outcome"] == "failed":
                    ET.SubElement(case, "failure", message=_case_reason(c), type=c["kind"] or "failed").text = (
                        _case_reason(c) + (f"\nhint: {task['hint']}" if task.get("hint") else ""))
                    counts["failures"] += 1
                elif c["outcome"] == "skipped":
                    ET.SubElement(case, "skipped", message=c["message"])
                    counts["skipped"] += 1
    for key, value in counts.items():
        suite.set(key, f"{value:.3f}" if key == "time" else str(value))
    return counts


def junit_xml(suites: list[tuple[str, dict | None, str]], name: str) -> str:
    """JUnit XML with one <testsuite> per (name, report or None, error) and one <testcase> per case."""
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for suite_name, report, error in suites:
        counts = _junit_suite(root, suite_name, report, error)
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, f"{value:.3f}" if key == "time" else str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def task_scores(result: Result) -> dict[str, float]:
    return {t["id"]: t["score"] for t in result.report["tasks"]} if result.status == GRADED else {}


def gradebook_csv(book: Gradebook) -> str:
    """One row per student: a column per task, the total, max, percent, status and any error.

    A refused submission totals 0; one the grader failed on has no total, so it cannot be
    uploaded as a grade by mistake.
    """
    task_ids = [t["id"] for t in book.meta_value("tasks")]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *task_ids, "total", "max_score", "percent", "status", "error"])
    for r in book.results():
        scores = task_scores(r)
        if r.status == FAILED:
            total = percent = ""
        else:
            total, percent = _num(r.score), _num(100 * r.score / r.max_score if r.max_score else 0)
        writer.writerow([r.student, *(_num(scores[t]) if t in scores else "" for t in task_ids), total,
                         _num(r.max_score), percent, r.status, r.error])
    return out.getvalue()


def gradebook_json(book: Gradebook) -> str:
    """The whole gradebook as one JSON document (schema pmap-course/gradebook, version 1)."""
    doc = {
        "schema": GRADEBOOK_SCHEMA,
        "schema_version": GRADEBOOK_SCHEMA_VERSION,
        **{k: book.meta_value(k) for k in ("course", "exercise", "seed", "course_hash", "grader_version", "tasks",
                                           "max_score")},
        "students": [
            {"student": r.student, "status": r.status, "score": r.score, "max_score": r.max_score,
             "tasks": task_scores(r), "error": r.error, "submission_hash": r.submission_hash,
             "course_hash": r.course_hash, "seed": r.seed, "source": r.source, "graded_at": r.graded_at,
             "duration_s": r.duration_s, "report": r.report}
            for r in book.results()
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def gradebook_junit(book: Gradebook) -> str:
    title = f"{book.meta_value('course')} {book.meta_value('exercise')}"
    return junit_xml([(r.student, r.report if r.status == GRADED else None, r.error) for r in book.results()], title)
