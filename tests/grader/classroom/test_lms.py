"""Canvas and Moodle grade import CSVs: a row per roster student, marks from the gradebook.

The class is graded once on the toy course (toycourse.py); the roster lists a student who sent
nothing, and a submission comes from someone not on it. Every file is read back with csv.
"""

import csv
import io
import shutil

import pytest

from classroom import batch, toy_class, zip_archive
from conftest import run_grade
from grader.classroom import classlist
from grader.classroom.gradebook import FAILED, Gradebook, Result
from toycourse import EXERCISE, SOLUTIONS

BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"
ROSTER = """student,name,canvas_id,sis_user_id,sis_login_id,section,email,notes
ann,"Lee, Ann",101,S1,ann.lee,A,ann@uni.edu,keeps this column
ben,Ben Ng,102,S2,ben.ng,B,ben@uni.edu,
cy,Cy Ott,103,S3,cy.ott,A,cy@uni.edu,
eve,Eve Ray,104,S4,eve.ray,B,eve@uni.edu,
"""
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("lms")
    course, subs = toy_class(root, {"ann": {f"{EXERCISE}/{name}": text for name, text in SOLUTIONS.items()},
                                    "ben": {f"{EXERCISE}/add.py": BEN_ADD},
                                    "dan": {f"{EXERCISE}/add.py": SOLUTIONS["add.py"]}})
    zip_archive(subs / "cy.zip", {"/abs/add.py": SOLUTIONS["add.py"]})
    book = root / "class.sqlite"
    batch(subs, course, book, "--seed", "7")
    roster = root / "roster.csv"
    roster.write_text(ROSTER)
    return book, roster


def export(book, roster, fmt, *args):
    proc = run_grade("export", str(book), "--format", fmt, "--roster", str(roster), *args)
    assert proc.returncode == 0, proc.stderr
    return list(csv.reader(io.StringIO(proc.stdout))), proc.stderr


def test_canvas_has_its_columns_a_row_per_roster_student_and_the_marks(graded):
    book, roster = graded
    table, _ = export(*graded, "canvas", "--assignment", "Week 7")
    assert table[0] == CANVAS_HEADER
    assert table[1] == ["Points Possible", "", "", "", "", "10"]
    # ann: 10 + 5 extra credit; ben: 1 of 4 weighted cases of add; cy: refused (0); eve: sent nothing (empty).
    assert table[2:] == [["Lee, Ann", "101", "S1", "ann.lee", "A", "15"],
                         ["Ben Ng", "102", "S2", "ben.ng", "B", "2.5"],
                         ["Cy Ott", "103", "S3", "cy.ott", "A", "0"],
                         ["Eve Ray", "104", "S4", "eve.ray", "B", ""]]


def test_canvas_warns_about_submissions_off_the_roster_and_students_without_one(graded):
    _, roster = graded
    _, stderr = export(*graded, "canvas", "--assignment", "Week 7")
    assert f"1 submission from ids not on the roster {roster}, not exported: dan" in stderr
    assert "1 student on the roster without a submission (empty mark): eve" in stderr


def test_canvas_without_an_assignment_column_is_refused_rather_than_make_a_new_assignment(graded):
    """Canvas's import creates an assignment for a column it does not know: "ex1" would be a new one."""
    book, roster = graded
    proc = run_grade("export", str(book), "--format", "canvas", "--roster", str(roster))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"--format canvas needs --assignment: {roster} is no Canvas gradebook export" in proc.stderr


def test_the_moodle_assignment_column_defaults_to_the_exercise(graded):
    table, _ = export(*graded, "moodle")
    assert table[0][-1] == EXERCISE


def test_moodle_rows_are_matched_by_email_and_extra_credit_is_capped_by_default(graded):
    """ann has 15 of 10 (5 extra credit): Moodle refuses a whole file for one mark above the maximum."""
    table, stderr = export(*graded, "moodle", "--assignment", "Week 7")
    assert table == [["Email address", "ID number", "Week 7"], ["ann@uni.edu", "S1", "10"], ["ben@uni.edu", "S2", "2.5"],
                     ["cy@uni.edu", "S3", "0"], ["eve@uni.edu", "S4", ""]]
    assert "1 mark above the maximum 10 capped at it, since Moodle refuses the whole file" in stderr
    assert ": ann (15). To keep the extra credit, export with --above-max column" in stderr
    assert "--above-max keep where Site administration > Grades > General settings > Unlimited grades is on" in stderr


def test_moodle_extra_credit_in_a_column_of_its_own_or_kept(graded):
    table, stderr = export(*graded, "moodle", "--assignment", "Week 7", "--above-max", "column")
    assert table[0] == ["Email address", "ID number", "Week 7", "Week 7 extra credit"]
    assert [row[2:] for row in table[1:]] == [["10", "5"], ["2.5", "0"], ["0", "0"], ["", ""]]
    assert "the column 'Week 7 extra credit' holds what is above it" in stderr
    table, stderr = export(*graded, "moodle", "--above-max", "keep")
    assert table[1][2] == "15" and "kept as they are: ann (15)" in stderr


def test_canvas_keeps_marks_above_points_possible(graded):
    table, stderr = export(*graded, "canvas", "--assignment", "Week 7")
    assert table[2][-1] == "15" and "above the maximum" not in stderr


def test_a_submission_the_grader_failed_on_gets_no_mark(graded, tmp_path):
    book, roster = graded
    copy = tmp_path / "copy.sqlite"
    shutil.copy(book, copy)
    with Gradebook(str(copy)) as gb:
        gb.record(Result("ben", "h", "c", FAILED, 0.0, 10.0, "the grader failed (exit code 3): boom", "ben", 7))
    proc = run_grade("export", str(copy), "--format", "canvas", "--roster", str(roster), "--assignment", "W")
    assert proc.returncode == 0, proc.stderr
    rows = {row[0]: row[-1] for row in csv.reader(io.StringIO(proc.stdout))}
    assert rows["Ben Ng"] == ""
    assert "the grader failed on 1 submission;" in proc.stderr


def test_canvas_writes_names_as_text_and_ids_as_they_are(graded, tmp_path):
    book, _ = graded
    roster = tmp_path / "roster.csv"
    roster.write_text('student,name,canvas_id,section\nann,"=HYPERLINK(""http://evil.example"")",-101,@A\n')
    table, _ = export(book, roster, "canvas", "--assignment", "Week 7")
    assert table[2] == ["'=HYPERLINK(\"http://evil.example\")", "-101", "", "", "'@A", "15"]


def test_canvas_needs_an_id_canvas_can_match(graded, tmp_path):
    book, _ = graded
    roster = tmp_path / "r.csv"
    roster.write_text("student,name,section\nann,Ann,A\n")
    proc = run_grade("export", str(book), "--format", "canvas", "--roster", str(roster), "--assignment", "W")
    assert proc.returncode == 2
    assert f"{roster}:2: column 'canvas_id or sis_user_id or sis_login_id' (student ann): empty" in proc.stderr
    assert proc.stdout == ""


def test_moodle_needs_an_email(graded, tmp_path):
    book, _ = graded
    roster = tmp_path / "r.csv"
    roster.write_text("student,name,email\nann,Ann,ann@uni.edu\nben,Ben,\n")
    proc = run_grade("export", str(book), "--format", "moodle", "--roster", str(roster))
    assert proc.returncode == 2 and f"{roster}:3: column 'email' (student ben): empty" in proc.stderr


def test_an_lms_format_needs_a_roster(graded):
    proc = run_grade("export", str(graded[0]), "--format", "canvas")
    assert proc.returncode == 2 and "needs --roster" in proc.stderr


@pytest.mark.parametrize("text, message", [
    ("name,email\nAnn,a@x\n", ":1: no column 'student' in the header"),
    ("student,Name,student\nann,Ann,ann\n", ":1: column 'student' appears more than once"),
    ("student,name\nann,Ann\nben,Ben\nann,Ann Two\n", ":4: column 'student': id 'ann' is already on row 2"),
    ("student,name\nann,\n", ":2: column 'name' is empty"),
    ("student,name\n,Ann\n", ":2: column 'student' is empty"),
    ("student,name\nann,Ann,extra\n", ":2: 3 values but the header names 2 columns"),
])
def test_a_doubtful_roster_is_refused_naming_the_row_and_column(tmp_path, text, message):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(classlist.RosterError) as info:
        classlist.load(str(path))
    assert f"{path}{message}" in str(info.value)


def test_a_roster_that_is_not_utf8_is_refused_at_the_byte(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes("student,name,section\nann,Ann,A\nzoe,Zoë,B\n".encode("latin-1"))
    with pytest.raises(classlist.RosterError) as info:
        classlist.load(str(path))
    assert f"{path}:3: column 'name': byte 0xeb is not UTF-8" in str(info.value)


def test_a_bad_roster_stops_the_export_with_exit_2(graded, tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student,name\nann,Ann\nann,Ann\n")
    proc = run_grade("export", str(graded[0]), "--format", "canvas", "--roster", str(path))
    assert proc.returncode == 2 and f"{path}:3: column 'student'" in proc.stderr and proc.stdout == ""


def test_header_names_ignore_case_and_spaces_and_a_bom(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_bytes("\ufeff Student ,NAME,Email\r\nann,Ann,ann@x\r\n\r\n".encode())
    roster = classlist.load(str(path))
    assert [(s.id, s.name, s.get("email"), s.row) for s in roster.students] == [("ann", "Ann", "ann@x", 2)]
