"""Marks in the CSV forms an LMS gradebook imports: Canvas and Moodle.

Rows come from the roster (:mod:`.classlist`), not from the gradebook: the LMS knows students by
its own ids, and a student who sent nothing must still get a row, with an empty mark, so the
import shows who is missing instead of leaving last week's mark standing. A submission from an id
not on the roster cannot be placed and is returned as a warning. A refused submission scores 0; a
submission the grader failed on gets an empty mark and a warning, so it is never uploaded as a
grade by mistake (``grade export`` warns about those).

Canvas: the columns its gradebook import documents (Student, ID, SIS User ID, SIS Login ID,
Section), then one column per assignment, with the "Points Possible" row its own exports carry.
Moodle: "Email address" (the identifier to map on import), "ID number", then the assignment. Moodle's
import refuses the whole file (``gradevaluetoobig``) for one mark above the grade item's maximum
unless the site allows unlimited grades, so a mark above the gradebook's maximum (extra credit) is
capped at it by default, and the warnings name whom that touched and the two ways to keep the
extra: ``column`` (a second column with what is above the maximum, imported into a grade item of
its own) or ``keep`` (for a site with "Unlimited grades" on). Canvas accepts marks above "Points
Possible" and keeps them.
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
from grader.errors import UsageError
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


def canvas_assignment(roster: ClassList) -> str:
    """The assignment column of Canvas's gradebook export given as the roster, for a file that reaches that
    assignment: Canvas's import makes a new assignment of any column it does not know, so with no such
    column (a roster of one's own) or several, the instructor must name it (UsageError)."""
    if len(roster.assignments) == 1:
        return roster.assignments[0]
    found = (f"{roster.path} has the assignment columns {', '.join(map(repr, roster.assignments))}"
             if roster.assignments else f"{roster.path} is no Canvas gradebook export with an assignment column")
    raise UsageError(f"--format canvas needs --assignment: {found}, and Canvas creates a new assignment for a column "
                     "it does not know; give the column as Canvas's export names it, e.g. --assignment "
                     "\"Week 7 (5551)\"")


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


UNLIMITED = "Site administration > Grades > General settings > Unlimited grades"


def _above_max_note(above: list[tuple[str, float]], maximum: float, how: str, assignment: str) -> list[str]:
    if not above:
        return []
    who = ", ".join(f"{line(sid)} ({cell_number(score)})" for sid, score in above)
    if how == "keep":
        return [f"{_count(len(above), 'mark')} above the maximum {cell_number(maximum)} kept as they are: {who}; "
                f"Moodle imports them only where {UNLIMITED} is on"]
    if how == "column":
        return [f"{_count(len(above), 'mark')} above the maximum {cell_number(maximum)}: {who}; the column "
                f"'{line(assignment)} extra credit' holds what is above it, for a grade item of its own"]
    return [f"{_count(len(above), 'mark')} above the maximum {cell_number(maximum)} capped at it, since Moodle refuses "
            f"the whole file for one mark above a grade item's maximum: {who}. To keep the extra credit, export "
            f"with --above-max column (a second column to import into a grade item of its own), or with "
            f"--above-max keep where {UNLIMITED} is on"]


def moodle_csv(book: Gradebook, roster: ClassList, assignment: str, above_max: str = "cap") -> tuple[str, list[str]]:
    """(Moodle grade import CSV, warnings for stderr); map "Email address" to the user's email on import.
    ``above_max`` says what becomes of a mark above the gradebook's maximum: cap, column or keep."""
    results = {r.student: r for r in book.results()}
    maximum = book.meta_value("max_score")
    header = ["Email address", "ID number", assignment] + ([f"{assignment} extra credit"] if above_max == "column" else [])
    rows, above = [], []
    for s in roster.students:
        _require(roster, s, ("email",), "Moodle's import matches a row to a student by email address")
        result = results.get(s.id)
        mark = _mark(result)
        extra = "" if mark == "" else "0"
        if mark and result.score > result.max_score:
            above.append((s.id, result.score))
            if above_max != "keep":
                mark, extra = cell_number(result.max_score), cell_number(result.score - result.max_score)
        rows.append([s.get("email"), s.get("sis_user_id"), mark] + ([extra] if above_max == "column" else []))
    return _write(header, rows), _warnings(book, roster) + _above_max_note(above, maximum, above_max, assignment)
