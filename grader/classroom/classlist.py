"""The class list: the roster CSV an instructor already keeps, read strictly.

It says who is in the class and how the LMS knows each of them, so exports can name every
student, give an empty mark to whoever sent nothing, and warn about submissions from nobody on the
list. A roster is trusted to decide grades, so a doubtful one is refused, never half read: a
missing column, a blank or repeated student id, a file that is not UTF-8, each stops with the
file, the row and the column (row 1 is the header, as a spreadsheet numbers it).

Columns (header names are matched without regard to case or surrounding spaces; others are ignored):

``student``       required: the id submissions are named by (the folder or archive name)
``name``          required: the student's name as the LMS shows it
``canvas_id``     Canvas's user ID            ``sis_user_id``   the SIS user ID (Moodle's "ID number")
``sis_login_id``  the SIS login ID            ``section``       the course section
``email``         the email address Moodle matches students by
``due:<exercise>`` this student's own deadline for that exercise (an extension; see :mod:`.deadlines`)

An LMS's own export is a roster too, read as downloaded: Canvas's gradebook export (Grades, Export:
``Student, ID, SIS User ID, SIS Login ID, Section, ...``, where the student id is Canvas's user ID, the
id its bulk submission download names files by; its "Points Possible" and "Manual Posting" rows have no
ID and are skipped; its assignment columns, named ``<title> (<assignment id>)``, are kept as
:attr:`ClassList.assignments`, the names a Canvas import file must use to reach those assignments),
and Moodle's grading worksheet (the assignment's "Download grading worksheet":
``Identifier, Full name, Email address, ...``, where the student id is the number of its "Participant
1234567", the number its "Download all submissions" names folders by). See :mod:`.lms_download`.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from grader.errors import UsageError

REQUIRED = ("student", "name")
OPTIONAL = ("canvas_id", "sis_user_id", "sis_login_id", "section", "email")


class RosterError(UsageError):
    """The roster cannot be trusted as it is; the message names the file, the row and the column."""


@dataclass(frozen=True)
class Student:
    id: str
    name: str
    row: int
    fields: dict[str, str] = field(default_factory=dict)

    def get(self, column: str) -> str:
        return self.fields.get(column, "")


@dataclass(frozen=True)
class ClassList:
    path: str
    students: tuple[Student, ...]
    assignments: tuple[str, ...] = ()  # a Canvas export's assignment columns, "Week 7 (5551)"

    def ids(self) -> list[str]:
        return [s.id for s in self.students]

    def fail(self, student: Student, column: str, problem: str) -> RosterError:
        return RosterError(f"{self.path}:{student.row}: column '{column}' (student {student.id}): {problem}")


def _decode(path: str, data: bytes) -> str:
    """The file as text, or a RosterError at the first byte that is not UTF-8 (by row and column)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        row = data[:exc.start].count(b"\n") + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        header = next(csv.reader([data.split(b"\n", 1)[0].decode("utf-8-sig", "replace")]), [])
        before = data[line_start:exc.start].decode("utf-8", "replace")
        index = len(next(csv.reader([before]), [""])) - 1
        column = header[index].strip() if 0 <= index < len(header) else f"#{index + 1}"
        raise RosterError(f"{path}:{row}: column '{column}': byte 0x{data[exc.start]:02x} is not UTF-8; "
                          "save the roster as CSV UTF-8") from None


def _canvas_row(cells: dict[str, str]) -> dict[str, str] | None:
    """A row of Canvas's gradebook export in the roster's columns; None for its rows that are no student."""
    if not cells.get("id"):
        return None  # "Points Possible", and "Manual Posting" when an assignment has that policy
    name = cells.get("student") or ", ".join(filter(None, (cells.get("lastname"), cells.get("firstname"))))
    return {**cells, "student": cells["id"], "name": name, "canvas_id": cells["id"],
            "sis_user_id": cells.get("sis user id", ""), "sis_login_id": cells.get("sis login id", "")}


def _moodle_row(cells: dict[str, str]) -> dict[str, str] | None:
    """A row of Moodle's grading worksheet in the roster's columns: "Participant 1234567" is student 1234567."""
    number = re.search(r"(\d+)\s*$", cells.get("identifier", ""))
    return {**cells, "student": number.group(1) if number else "", "name": cells.get("full name", ""),
            "email": cells.get("email address", ""), "sis_user_id": cells.get("id number", "")}


def _shape(path: str, header: list[str]):
    """How a row of this file becomes a row of the roster: as it is, or from an LMS export's columns."""
    columns = set(header)
    if set(REQUIRED) <= columns:
        return lambda cells: cells
    if "id" in columns and ({"student"} <= columns or {"lastname", "firstname"} <= columns) \
            and columns & {"sis login id", "section"}:
        return _canvas_row
    if {"identifier", "full name"} <= columns:
        return _moodle_row
    missing = [c for c in REQUIRED if c not in columns]
    raise RosterError(f"{path}:1: no column {', '.join(repr(c) for c in missing)} in the header "
                      f"({', '.join(header) or 'empty'}); a roster needs {', '.join(REQUIRED)}, or is Canvas's "
                      "gradebook export or Moodle's grading worksheet as downloaded")


_CANVAS_ASSIGNMENT = re.compile(r".+ \(\d+\)")


def _header(path: str, reader) -> tuple[list[str], tuple[str, ...]]:
    """(the header's names, lower-cased, to match on; the Canvas assignment columns, as written)."""
    written = [name.strip() for name in next(reader, [])]
    header = [name.lower() for name in written]
    repeated = sorted({c for c in header if c and header.count(c) > 1})
    if repeated:
        raise RosterError(f"{path}:1: column '{repeated[0]}' appears more than once in the header")
    return header, tuple(name for name in written if _CANVAS_ASSIGNMENT.fullmatch(name))


def _delimiter(text: str) -> str:
    """Canvas writes ``;`` between columns for users whose locale writes decimal commas."""
    first = text.split("\n", 1)[0]
    return ";" if first.count(";") > first.count(",") else ","


def read_text(path: str, what: str) -> str:
    """A CSV file's text; RosterError if it cannot be read or is not UTF-8 (naming row and column)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise RosterError(f"cannot read {what} {path}: {exc.strerror}") from None
    return _decode(path, data)


def load(path: str) -> ClassList:
    """Read and check the roster CSV at ``path``; RosterError (exit 2) names what is wrong and where."""
    text = read_text(path, "roster")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    header, assignments = _header(path, reader)
    shape = _shape(path, header)
    students, seen = [], {}
    for values in reader:
        row = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            raise RosterError(f"{path}:{row}: {len(values)} values but the header names {len(header)} columns")
        cells = shape({name: value.strip() for name, value in zip(header, values)})
        if cells is None:
            continue
        for column in REQUIRED:
            if not cells.get(column):
                raise RosterError(f"{path}:{row}: column '{column}' is empty")
        sid = cells["student"]
        if sid in seen:
            raise RosterError(f"{path}:{row}: column 'student': id {sid!r} is already on row {seen[sid]}")
        seen[sid] = row
        students.append(Student(sid, cells["name"], row,
                                {k: v for k, v in cells.items() if k in OPTIONAL or k.startswith("due:")}))
    return ClassList(path, tuple(students), assignments if shape is _canvas_row else ())
