"""Grades in the forms other tools read: CSV for spreadsheets and LMSs, Gradescope's results.json,
JUnit XML for CI test reporters, and plain JSON.

Everything here works from JSON reports (schema ``pmap-course/report``) and gradebook results, so a
single run (``grade EXERCISE --format gradescope``) and a gradebook export write the same thing:
Gradescope's results.json is made by :mod:`grader.grading.gradescope`, JUnit by :mod:`grader.grading.junit`.
"""

from __future__ import annotations

import csv
import io
import json

from grader.classroom.gradebook import FAILED, GRADED, Gradebook, Result
from grader.grading.junit import junit_xml
from grader.layout import number
from grader.grading.sanitise import spreadsheet

GRADEBOOK_SCHEMA = "pmap-course/gradebook"
GRADEBOOK_SCHEMA_VERSION = 1


def cell_number(x: float) -> str:
    return number(x, 4)  # 4 decimals: enough that a spreadsheet adds the tasks up to the total


def task_scores(result: Result) -> dict[str, float]:
    return {t["id"]: t["score"] for t in result.report["tasks"]} if result.status == GRADED else {}


def late(result: Result) -> dict | None:
    """The late record of a graded result (see grader.classroom.deadlines), or None."""
    return (result.report or {}).get("late") if result.status == GRADED else None


LATE_COLUMNS = ("raw_score", "days_late", "penalty")
LATE_TIMES = ("submitted_at", "due")


def gradebook_csv(book: Gradebook) -> str:
    """One row per student: a column per task, the total, max, percent, status and any error; where
    the exercise has a deadline, also the raw score, days late and penalty before the total (the
    final score) and the submission time and deadline after it.

    A refused submission totals 0; one the grader failed on has no total, so it cannot be
    uploaded as a grade by mistake. Student ids and errors are written as spreadsheet text
    (grader.grading.sanitise.spreadsheet).
    """
    task_ids = [t["id"] for t in book.meta_value("tasks")]
    results = book.results()
    dated = any(late(r) for r in results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", *task_ids, *(LATE_COLUMNS if dated else ()), "total", "max_score", "percent",
                     "status", "error", *(LATE_TIMES if dated else ())])
    for r in results:
        scores = task_scores(r)
        if r.status == FAILED:
            total = percent = ""
        else:
            total, percent = cell_number(r.score), cell_number(100 * r.score / r.max_score if r.max_score else 0)
        record = late(r) or {}
        writer.writerow([spreadsheet(r.student), *(cell_number(scores[t]) if t in scores else "" for t in task_ids),
                         *(str(record.get(c, "")) for c in (LATE_COLUMNS if dated else ())), total,
                         cell_number(r.max_score), percent, r.status, spreadsheet(r.error),
                         *(record.get(c, "") for c in (LATE_TIMES if dated else ()))])
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
