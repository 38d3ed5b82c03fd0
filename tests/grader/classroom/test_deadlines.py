"""Deadlines: due dates in course.yaml, extensions in the roster, submission times, the late policy.

The end-to-end part grades one class of the toy course (toycourse.py) with a deadline and a policy
of 10 % a day, capped at 25 %, with 15 minutes' grace, and reads the penalties back from the
gradebook, the CSV and Canvas exports (with csv) and the summary.
"""

import csv
import datetime
import io
import json
import os
import sqlite3

import pytest
import yaml

from classroom import Page, batch, folder, toy_class
from conftest import run_grade
from grader.classroom import classlist, deadlines
from grader.classroom.gradebook import Gradebook
from grader.course import CourseError, LatePolicy, load_course
from toycourse import EXERCISE, SOLUTIONS

UTC = datetime.timezone.utc
DUE = datetime.datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
POLICY = LatePolicy(per_day=10, cap=25, grace_minutes=15)
FULL = {f"{EXERCISE}/{name}": text for name, text in SOLUTIONS.items()}
ADD_ONLY = {f"{EXERCISE}/add.py": SOLUTIONS["add.py"]}


@pytest.mark.parametrize("late_by, days, percent", [
    (datetime.timedelta(hours=-3), 0, 0.0),
    (datetime.timedelta(minutes=15), 0, 0.0),            # inside the grace period
    (datetime.timedelta(minutes=16), 1, 10.0),           # past it: the first day counts from the deadline
    (datetime.timedelta(days=1), 1, 10.0),
    (datetime.timedelta(days=1, seconds=1), 2, 20.0),    # a part of a day is a day
    (datetime.timedelta(days=9), 9, 25.0),               # capped
])
def test_the_penalty_is_per_day_or_part_after_the_grace_and_capped(late_by, days, percent):
    lateness = deadlines.assess(DUE + late_by, DUE, POLICY)
    assert (lateness.days_late, lateness.percent) == (days, percent)
    record = lateness.record(12.0)
    assert (record["raw_score"], record["penalty"], record["score"]) == (12.0, 12.0 * percent / 100,
                                                                         12.0 - 12.0 * percent / 100)


def test_without_a_policy_a_late_submission_is_flagged_but_keeps_its_score():
    lateness = deadlines.assess(DUE + datetime.timedelta(days=2), DUE, None)
    assert (lateness.days_late, lateness.record(7.0)["score"]) == (2, 7.0)


def write_course(root, exercise_extra=None, defaults_extra=None):
    course, _ = toy_class(root, {})
    data = yaml.safe_load((course / "course.yaml").read_text())
    data["defaults"].update(defaults_extra or {})
    data["exercises"][EXERCISE].update(exercise_extra or {})
    (course / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return course


def test_course_yaml_reads_due_dates_in_the_courses_time_zone(tmp_path):
    course = write_course(tmp_path, {"due": "2026-03-01 23:59", "late": {"per_day": 10, "cap": 25}},
                          {"timezone": "Europe/Berlin"})
    exercise = load_course(str(course / "course.yaml")).exercise(EXERCISE)
    assert exercise.due == datetime.datetime(2026, 3, 1, 22, 59, tzinfo=UTC)
    assert exercise.late == LatePolicy(per_day=10, cap=25, grace_minutes=0)


def test_a_date_alone_is_due_at_the_end_of_that_day(tmp_path):
    course = write_course(tmp_path, {"due": "2026-03-01"})
    assert load_course(str(course / "course.yaml")).exercise(EXERCISE).due == datetime.datetime(
        2026, 3, 1, 23, 59, 59, tzinfo=UTC)


@pytest.mark.parametrize("exercise_extra, defaults_extra, at, message", [
    ({"due": "March 1st"}, {}, "due:", "exercises.ex1.due: expected a date and time"),
    ({"due": "2026-02-30 12:00"}, {}, "due:", "exercises.ex1.due: expected a date and time"),
    ({"late": {"per_day": 150}}, {}, "per_day:", "exercises.ex1.late.per_day: expected a percentage from 0 to 100, got 150"),
    ({"late": {"cap": 20}}, {}, "cap:", "exercises.ex1.late: expected a key 'per_day'"),
    ({"late": {"per_day": 5, "grace": 10}}, {}, "grace:", "exercises.ex1.late.grace: expected one of the keys"),
    ({}, {"timezone": "Mars/Olympus"}, "timezone:", "defaults.timezone: expected an IANA time zone"),
])
def test_a_bad_deadline_or_policy_names_the_file_line_and_key(tmp_path, exercise_extra, defaults_extra, at, message):
    course = write_course(tmp_path, exercise_extra, defaults_extra)
    with pytest.raises(CourseError) as info:
        load_course(str(course / "course.yaml"))
    line = next(i for i, text in enumerate((course / "course.yaml").read_text().splitlines(), 1)
                if text.strip().startswith(at))
    assert f"course.yaml:{line}: {message}" in str(info.value)


def roster_file(tmp_path, text):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return classlist.load(str(path))


@pytest.mark.parametrize("text, message", [
    ("student,name,due:ex2\nann,Ann,2026-03-05\n", ":2: column 'due:ex2' (student ann): no exercise 'ex2' in the course"),
    ("student,name,due:ex1\nann,Ann,2026-03-05\nben,Ben,next friday\n",
     ":3: column 'due:ex1' (student ben): expected a date and time"),
])
def test_a_bad_extension_names_the_row_and_column(tmp_path, text, message):
    course = load_course(str(write_course(tmp_path / "c", {"due": "2026-03-01"}) / "course.yaml"))
    roster = roster_file(tmp_path, text)
    with pytest.raises(classlist.RosterError) as info:
        deadlines.extensions(roster, course, course.exercise(EXERCISE))
    assert f"{roster.path}{message}" in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("student,submitted_at\nann,2026-03-01 10:00\nzed,2026-03-01 10:00\n",
     ":3: column 'student': 'zed' has no submission in this batch"),
    ("student,submitted_at\nann,yesterday\n", ":2: column 'submitted_at': expected a date and time"),
    ("student,submitted_at\nann,2026-03-01\nann,2026-03-02\n", ":3: column 'student': 'ann' is given a time twice"),
    ("who,when\nann,2026-03-01\n", ":1: the header must start student,submitted_at"),
])
def test_bad_submission_times_name_the_row_and_column(tmp_path, text, message):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(classlist.RosterError) as info:
        deadlines.load_times(str(path), UTC, {"ann", "ben"})
    assert f"{path}{message}" in str(info.value)


def test_submission_times_that_are_not_utf8_name_the_row_and_column(tmp_path):
    path = tmp_path / "times.csv"
    path.write_bytes("student,submitted_at\nann,2026-03-01\u00a010:00\n".encode("latin-1"))
    with pytest.raises(classlist.RosterError) as info:
        deadlines.load_times(str(path), UTC, {"ann"})
    assert f"{path}:2: column 'submitted_at': byte 0xa0 is not UTF-8" in str(info.value)


def set_time(path, when: datetime.datetime):
    for root, _, names in os.walk(path):
        for name in names:
            os.utime(os.path.join(root, name), (when.timestamp(), when.timestamp()))


@pytest.fixture(scope="module")
def late_class(tmp_path_factory):
    """ann on time; ben 2 days late (-20 %); cy 2 days late, but 16 hours after the day-long extension; dan's
    files say 9 days late but the times CSV says on time; eve sent add only, 1 day late."""
    root = tmp_path_factory.mktemp("late")
    course = write_course(root, {"due": DUE.isoformat(), "late": {"per_day": 10, "cap": 25, "grace_minutes": 15}})
    subs = root / "class"
    for student, files in {"ann": FULL, "ben": FULL, "cy": FULL, "dan": FULL, "eve": ADD_ONLY}.items():
        folder(subs, student, files)
    for student, late_by in {"ann": -1, "ben": 36, "cy": 40, "dan": 24 * 9, "eve": 2}.items():
        set_time(subs / student, DUE + datetime.timedelta(hours=late_by))
    roster = root / "roster.csv"
    roster.write_text("student,name,canvas_id,due:ex1\nann,Ann,1,\nben,Ben,2,\ncy,Cy,3,2026-03-02 23:59+00:00\n"
                      "dan,Dan,4,\neve,Eve,5,\n")
    times = root / "times.csv"
    times.write_text("student,submitted_at\ndan,2026-03-01T20:00:00+00:00\n")
    book = root / "class.sqlite"
    proc = batch(subs, course, book, "--seed", "3", "--roster", str(roster), "--submitted-at", str(times))
    return course, subs, book, roster, times, proc


def test_the_gradebook_holds_raw_score_penalty_and_final_score(late_class):
    *_, book, _, _, _ = late_class
    with Gradebook(str(book), readonly=True) as gb:
        got = {r.student: (r.report["late"]["raw_score"], r.report["late"]["days_late"],
                           r.report["late"]["penalty"], r.score) for r in gb.results()}
    assert got == {"ann": (15.0, 0, 0.0, 15.0), "ben": (15.0, 2, 3.0, 12.0), "cy": (15.0, 1, 1.5, 13.5),
                   "dan": (15.0, 0, 0.0, 15.0), "eve": (10.0, 1, 1.0, 9.0)}
    with sqlite3.connect(book) as db:
        assert dict(db.execute("SELECT student, score FROM results"))["ben"] == 12.0


def test_the_csv_export_shows_raw_penalty_and_final(late_class):
    *_, book, _, _, _ = late_class
    proc = run_grade("export", str(book), "--format", "csv")
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(proc.stdout))}
    assert list(rows["ben"])[3:6] == ["raw_score", "days_late", "penalty"]
    assert (rows["ben"]["raw_score"], rows["ben"]["days_late"], rows["ben"]["penalty"], rows["ben"]["total"]) == (
        "15.0", "2", "3.0", "12")
    assert rows["cy"]["due"] == "2026-03-02T23:59:00+00:00"
    assert rows["dan"]["submitted_at"] == "2026-03-01T20:00:00+00:00"


def test_the_lms_gets_the_final_score(late_class):
    *_, book, roster, _, _ = late_class
    proc = run_grade("export", str(book), "--format", "canvas", "--roster", str(roster), "--assignment", "Week 7 (1)")
    marks = {row[0]: row[-1] for row in csv.reader(io.StringIO(proc.stdout))}
    assert (marks["Ben"], marks["Cy"], marks["Eve"]) == ("12", "13.5", "9")


def test_the_class_report_shows_raw_score_penalty_and_score(late_class, tmp_path):
    *_, book, _, _, _ = late_class
    proc = run_grade("report", str(book), "--html", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    page = Page()
    page.feed((tmp_path / "r.html").read_text())
    results = {row[0]: row[2:5] for row in page.rows["results"]}
    assert results["ben"] == ["15", "-3 (2 d late)", "12"] and results["ann"] == ["15", "", "15"]


def test_gradescope_gets_the_final_score_and_why(late_class, tmp_path):
    *_, book, _, _, _ = late_class
    proc = run_grade("export", str(book), "--format", "gradescope", "-o", str(tmp_path / "gs"))
    assert proc.returncode == 0, proc.stderr
    ben = json.loads((tmp_path / "gs" / "ben" / "results.json").read_text())
    ann = json.loads((tmp_path / "gs" / "ann" / "results.json").read_text())
    # the toy course has a hidden test: the penalty is said in percent, not in points of a hidden total
    assert ben["score"] == 12.0 and "Submitted 2 days after the deadline: 20% off of the total." in ben["output"]
    assert ann["score"] == 15.0 and "deadline" not in ann["output"]


def test_the_summary_lists_the_late_with_their_penalty(late_class):
    *_, proc = late_class
    assert "ben  2 days late  -20%  15 -> 12" in proc.stdout
    assert "eve  1 day late  -10%  10 -> 9" in proc.stdout
    assert "dan " not in proc.stdout.split("late (penalty")[1]


def test_a_new_extension_reprices_without_regrading(late_class, tmp_path):
    course, subs, book, roster, times, _ = late_class
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(book.read_bytes())
    longer = tmp_path / "roster.csv"
    longer.write_text(roster.read_text().replace("ben,Ben,2,", "ben,Ben,2,2026-03-05"))
    proc = batch(subs, course, copy, "--roster", str(longer), "--submitted-at", str(times))
    assert "grading 0, 5 already graded" in proc.stderr
    assert "1 kept results had a new deadline or submission time" in proc.stderr
    with Gradebook(str(copy), readonly=True) as gb:
        ben = gb.get("ben")
    assert (ben.score, ben.report["late"]["days_late"]) == (15.0, 0)


def test_an_unparseable_due_date_stops_the_batch_with_exit_2(tmp_path):
    course = write_course(tmp_path, {"due": "end of March"})
    folder(tmp_path / "class", "ann", FULL)
    proc = run_grade("batch", str(tmp_path / "class"), "--exercise", EXERCISE, "--course", str(course),
                     "--gradebook", str(tmp_path / "b.sqlite"))
    assert proc.returncode == 2 and "course.yaml:" in proc.stderr and "exercises.ex1.due: expected a date" in proc.stderr
    assert not (tmp_path / "b.sqlite").exists()


def test_extensions_without_a_due_date_are_refused(tmp_path):
    course, subs = toy_class(tmp_path, {"ann": FULL})
    roster = tmp_path / "roster.csv"
    roster.write_text("student,name,due:ex1\nann,Ann,2026-03-05\n")
    proc = run_grade("batch", str(subs), "--exercise", EXERCISE, "--course", str(course), "--roster", str(roster),
                     "--gradebook", str(tmp_path / "b.sqlite"))
    assert proc.returncode == 2 and "ex1 has no due date" in proc.stderr
    assert not (tmp_path / "b.sqlite").exists()


def test_an_unknown_student_in_the_times_file_stops_the_batch_before_grading(late_class, tmp_path):
    course, subs, _, _, _, _ = late_class
    times = tmp_path / "times.csv"
    times.write_text("student,submitted_at\nzed,2026-03-01 10:00\n")
    proc = run_grade("batch", str(subs), "--exercise", EXERCISE, "--course", str(course), "--submitted-at",
                     str(times), "--gradebook", str(tmp_path / "b.sqlite"))
    assert proc.returncode == 2 and f"{times}:2: column 'student': 'zed' has no submission" in proc.stderr
    assert not (tmp_path / "b.sqlite").exists()
