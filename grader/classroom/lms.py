"""Marks in the CSV forms an LMS gradebook imports: Canvas and Moodle.

Rows come from the roster (:mod:`.classlist`), not from the gradebook: the LMS knows students by
its own ids, and a student who sent nothing must still get a row, with an empty mark, so the
import shows who is missing instead of leaving last week's mark standing. A submission from an id
not on the roster cannot be placed and is returned as a warning. A refused submission scores 0; a
submission the grader failed on gets an empty mark and a warning, so it is never uploaded as a
grade by mistake (``grade export`` warns about those).

Canvas: the columns its gradebook import documents (Student, ID, SIS User ID, SIS Login ID,
Section), then one column per assignment, with the "Points Possible" row its own exports carry.
Moodle: "Email address" (the identifier to map on import), "ID number", then the assignment.
Names and sections are written as spreadsheet text (grader.grading.sanitise.spreadsheet); the ids an LMS
matches on are written as they are (they come from the roster, the instructor's file, not from a
submission).
"""

from __future__ import annotations

import csv
import io

from grader.classroom.classlist import ClassList, Student
from grader.classroom.exports import cell_number
from grader.classroom.gradebook import FAILED, Gradebook, Result
from grader.grading.sanitise import line, spreadsheet

CANVAS_IDS = (("ID", "canvas_id"), ("SIS User ID", "sis_user_id"), ("SIS Login ID", "sis_login_id"))


def _mark(result: Result | None) -> str:
    return "" if result is None or result.status == FAILED else cell_number(result.score)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _warnings(book: Gradebook, roster: ClassList) -> list[str]:
    on_roster = set(roster.ids())
    results = book.results()
    strangers = [r.student for r in results if r.student not in on_roster]
    missing = sorted(on_roster - {r.student for r in results})
    notes = []
    if strangers:
        notes.append(f"{_count(len(strangers), 'submission')} from ids not on the roster {roster.path}, "
                     f"not exported: {', '.join(map(line, strangers))}")
    if missing:
        notes.append(f"{_count(len(missing), 'student')} on the roster without a submission (empty mark): "
                     f"{', '.join(map(line, missing))}")
    return notes


def _require(roster: ClassList, student: Student, columns: tuple[str, ...], why: str) -> None:
    if not any(student.get(c) for c in columns):
        raise roster.fail(student, " or ".join(columns), f"empty; {why}")


def _write(header: list[str], rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def canvas_csv(book: Gradebook, roster: ClassList, assignment: str) -> tuple[str, list[str]]:
    """(Canvas gradebook import CSV, warnings for stderr)."""
    results = {r.student: r for r in book.results()}
    rows = [["Points Possible", "", "", "", "", cell_number(book.meta_value("max_score"))]]
    for s in roster.students:
        _require(roster, s, tuple(c for _, c in CANVAS_IDS), "Canvas matches a row to a student by one of them")
        rows.append([spreadsheet(s.name), *(s.get(c) for _, c in CANVAS_IDS), spreadsheet(s.get("section")),
                     _mark(results.get(s.id))])
    header = ["Student", *(h for h, _ in CANVAS_IDS), "Section", assignment]
    return _write(header, rows), _warnings(book, roster)


def moodle_csv(book: Gradebook, roster: ClassList, assignment: str) -> tuple[str, list[str]]:
    """(Moodle grade import CSV, warnings for stderr); map "Email address" to the user's email on import."""
    results = {r.student: r for r in book.results()}
    rows = []
    for s in roster.students:
        _require(roster, s, ("email",), "Moodle's import matches a row to a student by email address")
        rows.append([s.get("email"), s.get("sis_user_id"), _mark(results.get(s.id))])
    return _write(["Email address", "ID number", assignment], rows), _warnings(book, roster)
