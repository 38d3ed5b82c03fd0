"""Deadlines: when each submission came in, when it was due, and what the late policy takes off.

The submission time is a file timestamp, because that is what a folder or an archive carries: for
an archive, the archive file's modification time (when it was uploaded or downloaded, not the
dates inside it, which the student's machine wrote); for a folder, the newest modification time of
its files. LMS downloads often reset these, so an instructor can name the true times in a CSV
(``student,submitted_at``), which wins over any timestamp. A student's deadline is the exercise's
``due`` unless the roster gives that student a ``due:<exercise>`` of their own (an extension).

The penalty is ``per_day`` percent of the raw score for every day, or part of a day, past the
deadline, at most ``cap`` percent; a submission within ``grace_minutes`` of the deadline is on
time. The raw score stays in the report; the gradebook's score is the final one.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
from dataclasses import dataclass, replace

from grader.classroom import classlist
from grader.classroom.classlist import ClassList, RosterError
from grader.classroom.gradebook import GRADED, Gradebook, Result
from grader.course import TIME_FORMAT, Course, Exercise, LatePolicy, parse_time
from grader.errors import UsageError
from grader.submission import files

DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Lateness:
    submitted_at: datetime.datetime
    due: datetime.datetime
    days_late: int
    percent: float  # of the raw score taken off

    def record(self, raw_score: float) -> dict:
        """The ``late`` object of a report: what a reader needs to check the penalty by hand."""
        penalty = round(raw_score * self.percent / 100, 4)
        return {"submitted_at": self.submitted_at.isoformat(), "due": self.due.isoformat(),
                "days_late": self.days_late, "penalty_percent": self.percent, "raw_score": raw_score,
                "penalty": penalty, "score": round(raw_score - penalty, 4)}


def assess(submitted_at: datetime.datetime, due: datetime.datetime, policy: LatePolicy | None) -> Lateness:
    late_by = submitted_at - due
    grace = datetime.timedelta(minutes=policy.grace_minutes if policy else 0)
    days = math.ceil(late_by / DAY) if late_by > grace else 0
    percent = min(policy.cap, policy.per_day * days) if policy and days else 0.0
    return Lateness(submitted_at, due, days, float(percent))


def file_time(path: str) -> datetime.datetime:
    """The submission time a file system gives: an archive's mtime, or the newest file's in a folder."""
    stamps = [os.stat(p).st_mtime for _, p in files(path)] if os.path.isdir(path) else [os.stat(path).st_mtime]
    return datetime.datetime.fromtimestamp(max(stamps, default=os.stat(path).st_mtime), datetime.timezone.utc)


def _cell_error(path: str, row: int, column: str, problem: str) -> RosterError:
    return RosterError(f"{path}:{row}: column '{column}': {problem}")


def load_times(path: str, tz: datetime.tzinfo, students: set[str]) -> dict[str, datetime.datetime]:
    """The ``student,submitted_at`` override CSV, checked: every id one of ``students``, every time readable."""
    reader = csv.reader(io.StringIO(classlist.read_text(path, "submission times"), newline=""))
    header = [h.strip().lower() for h in next(reader, [])]
    if header[:2] != ["student", "submitted_at"]:
        raise RosterError(f"{path}:1: the header must start student,submitted_at, got {','.join(header)!r}")
    times = {}
    for values in reader:
        if not any(v.strip() for v in values):
            continue
        student, when = (values + ["", ""])[:2]
        student, row = student.strip(), reader.line_num
        if student not in students:
            raise _cell_error(path, row, "student", f"{student!r} has no submission in this batch")
        if student in times:
            raise _cell_error(path, row, "student", f"{student!r} is given a time twice")
        times[student] = parse_time(when, tz)
        if times[student] is None:
            raise _cell_error(path, row, "submitted_at", f"expected {TIME_FORMAT}, got {when!r}")
    return times


def extensions(roster: ClassList, course: Course, exercise: Exercise) -> dict[str, datetime.datetime]:
    """Per-student deadlines for ``exercise`` from the roster's ``due:<exercise>`` column, checked:
    a column for an exercise the course lacks, or a time that cannot be read, is an error."""
    found = {}
    for student in roster.students:
        for column, value in student.fields.items():
            if not column.startswith("due:") or not value:
                continue
            name = column.removeprefix("due:")
            if name not in course.exercises:
                raise roster.fail(student, column, f"no exercise {name!r} in the course; "
                                                   f"known: {', '.join(course.exercises)}")
            when = parse_time(value, course.timezone)
            if when is None:
                raise roster.fail(student, column, f"expected {TIME_FORMAT}, got {value!r}")
            if name == exercise.name:
                found[student.id] = when
    return found


@dataclass(frozen=True)
class Deadlines:
    """Everything a batch needs to price lateness: the exercise's deadline and policy, the
    extensions, and any submission times the instructor gave."""

    due: datetime.datetime
    policy: LatePolicy | None
    extended: dict[str, datetime.datetime]
    times: dict[str, datetime.datetime]

    def lateness(self, student: str, paths: tuple[str, ...]) -> Lateness:
        submitted = self.times.get(student) or max(file_time(p) for p in paths)
        return assess(submitted, self.extended.get(student, self.due), self.policy)


def for_batch(course: Course, exercise: Exercise, students: set[str], roster: ClassList | None,
              times_path: str | None) -> Deadlines | None:
    """The deadlines of a batch of ``students`` (the whole class, every shard), or None when the exercise
    has no due date; then extensions and submission times have nothing to apply to, and giving them
    is an error rather than silently ignored."""
    extended = extensions(roster, course, exercise) if roster else {}
    if exercise.due is None:
        if extended or times_path:
            raise UsageError(f"{exercise.name} has no due date in {course.path}, so extensions and --submitted-at "
                             f"cannot apply; add exercises.{exercise.name}.due")
        return None
    times = load_times(times_path, course.timezone, students) if times_path else {}
    return Deadlines(exercise.due, exercise.late, extended, times)


def priced(result: Result, lateness: Lateness | None) -> Result:
    """A graded ``result`` with its report's ``late`` record and the score after the penalty (the raw
    score without either when there is no deadline); other results as they are."""
    if result.status != GRADED:
        return result
    report = {k: v for k, v in result.report.items() if k != "late"}
    if lateness is None:
        return replace(result, score=report["score"], report=report)
    report["late"] = lateness.record(report["score"])
    return replace(result, score=report["late"]["score"], report=report)


def reprice(book: Gradebook, kept: list, deadlines: Deadlines | None) -> int:
    """Price again the results a batch keeps (a new extension or deadline needs no regrading);
    returns how many changed. ``kept`` are the roster entries whose results still stand."""
    changed = 0
    for entry in kept:
        stored = book.get(entry.student)
        lateness = deadlines.lateness(entry.student, entry.paths) if deadlines else None
        updated = priced(stored, lateness)
        if updated.report != stored.report:
            book.record(replace(updated, graded_at=""))
            changed += 1
    return changed
