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
"""

from __future__ import annotations

import csv
import io
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


def _header(path: str, reader) -> list[str]:
    header = [name.strip().lower() for name in next(reader, [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise RosterError(f"{path}:1: no column {', '.join(repr(c) for c in missing)} in the header "
                          f"({', '.join(header) or 'empty'}); a roster needs {', '.join(REQUIRED)}")
    repeated = sorted({c for c in header if c and header.count(c) > 1})
    if repeated:
        raise RosterError(f"{path}:1: column '{repeated[0]}' appears more than once in the header")
    return header


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
    reader = csv.reader(io.StringIO(read_text(path, "roster"), newline=""))
    header = _header(path, reader)
    students, seen = [], {}
    for values in reader:
        row = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            raise RosterError(f"{path}:{row}: {len(values)} values but the header names {len(header)} columns")
        cells = {name: value.strip() for name, value in zip(header, values)}
        for column in REQUIRED:
            if not cells.get(column):
                raise RosterError(f"{path}:{row}: column '{column}' is empty")
        sid = cells["student"]
        if sid in seen:
            raise RosterError(f"{path}:{row}: column 'student': id {sid!r} is already on row {seen[sid]}")
        seen[sid] = row
        students.append(Student(sid, cells["name"], row,
                                {k: v for k, v in cells.items() if k in OPTIONAL or k.startswith("due:")}))
    return ClassList(path, tuple(students))
