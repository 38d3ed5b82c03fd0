"""Grades in the forms other tools read: CSV for spreadsheets and LMSs, Gradescope's results.json,
JUnit XML for CI test reporters, and plain JSON.

Everything here works from JSON reports (schema ``pmap-course/report``) and gradebook results, so a
single run (``grade EXERCISE --format gradescope``) and a gradebook export write the same thing;
Gradescope's results.json itself is written by :mod:`grader.gradescope`.
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
