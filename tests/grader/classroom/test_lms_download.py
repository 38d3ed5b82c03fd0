"""Canvas as it is: its gradebook export as the roster, its bulk download as the class, its import as the output.

Files are written as Canvas writes them (lib/gradebook_exporter.rb in canvas-lms: a BOM, the
"Manual Posting" and "Points Possible" rows, the test student last; the download's loose files named
``<sortable name>[_LATE]_<user id>_<submission id>_<file>``). The class is graded once on the toy course.
"""

import csv
import io

import pytest

from classroom import batch, zip_archive
from conftest import run_grade
from grader.classroom import classlist
from toycourse import EXERCISE, SOLUTIONS, make_course

BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"
CANVAS_EXPORT = (
    '\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Week 7 (5551),Current Score,Final Score\r\n'
    ',,,,,Manual Posting,,\r\n'
    '    Points Possible,,,,,10.00,(read only),(read only)\r\n'
    '"Lee, Ann",101,S1,ann.lee,Section A,,,\r\n'
    '"Ng, Ben",102,S2,ben.ng,Section B,,,\r\n'
    '"Ott, Cy",103,S3,cy.ott,Section A,,,\r\n'
    '"Student, Test",104,,,Section A,,,\r\n')
MOODLE_WORKSHEET = ('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade","Grade can be changed",'
                    '"Last modified (submission)","Last modified (grade)","Feedback comments"\n'
                    '"Participant 1234567","Ann Lee",ann@uni.edu,"Submitted for grading",,10.00,Yes,"-",-,\n'
                    '"Participant 7654321","Ben Ng",ben@uni.edu,"No submission",,10.00,Yes,-,-,\n')


@pytest.fixture(scope="module")
def canvas_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("canvas")
    course = make_course(root / "course")
    download = root / "submissions"
    download.mkdir()
    (download / "leeann_101_9001_add.py").write_text(SOLUTIONS["add.py"])
    (download / "leeann_101_9001_scale-1.py").write_text(SOLUTIONS["scale.py"])  # uploaded a second time
    zip_archive(download / "ngben_LATE_102_9002_ex1.zip", {f"{EXERCISE}/add.py": BEN_ADD})
    (download / "notes.txt").write_text("the TA's notes, not a student\n")
    roster = root / "grades-export.csv"
    roster.write_bytes(CANVAS_EXPORT.encode())
    book = root / "class.sqlite"
    proc = batch(download, course, book, "--roster", str(roster), "--seed", "3")
    return book, roster, proc


def test_canvas_gradebook_export_is_a_roster_as_downloaded(tmp_path):
    path = tmp_path / "export.csv"
    path.write_bytes(CANVAS_EXPORT.encode())
    students = classlist.load(str(path)).students
    assert [(s.id, s.name, s.get("canvas_id"), s.get("sis_user_id"), s.get("section")) for s in students] == [
        ("101", "Lee, Ann", "101", "S1", "Section A"), ("102", "Ng, Ben", "102", "S2", "Section B"),
        ("103", "Ott, Cy", "103", "S3", "Section A"), ("104", "Student, Test", "104", "", "Section A")]
    assert [s.row for s in students] == [4, 5, 6, 7]  # the rows a spreadsheet shows them on
    assert classlist.load(str(path)).assignments == ("Week 7 (5551)",)  # not "Current Score"
    path.write_bytes(CANVAS_EXPORT.replace(",", ";").replace('"Lee; Ann"', '"Lee, Ann"').encode())
    assert classlist.load(str(path)).students[0].name == "Lee, Ann", "a locale with decimal commas writes ;"


def test_moodle_grading_worksheet_is_a_roster_as_downloaded(tmp_path):
    path = tmp_path / "worksheet.csv"
    path.write_text(MOODLE_WORKSHEET)
    students = classlist.load(str(path)).students
    assert [(s.id, s.name, s.get("email")) for s in students] == [("1234567", "Ann Lee", "ann@uni.edu"),
                                                                 ("7654321", "Ben Ng", "ben@uni.edu")]


def test_a_canvas_download_is_graded_per_student_and_stray_files_are_left_out(canvas_class):
    book, _, proc = canvas_class
    assert "left out 1 file that is no submission" in proc.stderr and "notes.txt" in proc.stderr
    export = run_grade("export", str(book), "--format", "csv")
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(export.stdout))}
    assert set(rows) == {"101", "102"}, "graded under the Canvas ids the roster has, and nobody for notes.txt"
    assert (rows["101"]["total"], rows["101"]["status"]) == ("15", "graded"), rows["101"]  # add, and scale-1.py
    assert (rows["102"]["total"], rows["102"]["status"]) == ("2.5", "graded"), rows["102"]  # unpacked from its zip


def test_canvas_import_file_from_the_canvas_roster(canvas_class):
    book, roster, _ = canvas_class
    proc = run_grade("export", str(book), "--format", "canvas", "--roster", str(roster))  # its one assignment column
    assert proc.returncode == 0, proc.stderr
    table = list(csv.reader(io.StringIO(proc.stdout)))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Week 7 (5551)"]
    assert table[2:] == [["Lee, Ann", "101", "S1", "ann.lee", "Section A", "15"],
                         ["Ng, Ben", "102", "S2", "ben.ng", "Section B", "2.5"],
                         ["Ott, Cy", "103", "S3", "cy.ott", "Section A", ""],
                         ["Student, Test", "104", "", "", "Section A", ""]]


def test_two_files_that_would_have_one_name_refuse_the_submission():
    from grader.classroom import intake

    files = (("/d/leeann_101_9001_dot.py", "dot.py"), ("/d/leeann_101_9001_dot-1.py", "dot.py"))
    assert intake.refusal(files) == ("two files would be dot.py (leeann_101_9001_dot-1.py, leeann_101_9001_dot.py); "
                                     "keep one and run the batch again")
    assert intake.refusal(files[:1]) == ""


@pytest.mark.parametrize("uploaded", ["..", "."])
def test_a_download_file_that_names_no_file_of_its_own_is_refused(uploaded):
    from grader.classroom import intake

    assert "names no file of its own" in intake.refusal(((f"/d/leeann_101_9001_{uploaded}", uploaded),))


def test_a_canvas_export_with_several_assignments_needs_one_named(tmp_path):
    from grader.classroom import lms
    from grader.errors import UsageError

    path = tmp_path / "export.csv"
    path.write_bytes(CANVAS_EXPORT.replace("Week 7 (5551),", "Week 7 (5551),Week 8 (5552),").encode())
    with pytest.raises(UsageError, match=r"has the assignment columns 'Week 7 \(5551\)', 'Week 8 \(5552\)'"):
        lms.canvas_assignment(classlist.load(str(path)))


def test_a_file_planted_under_a_classmates_moodle_name_stays_with_its_sender(tmp_path):
    """Moodle, folders off: 1001 uploads add.py and a wrong x_1002_assignsubmission_file_add.py; 1002 sent the
    solution. 1002 is graded on its own file alone (full marks), 1001 on its own files."""
    course = make_course(tmp_path / "course")
    download = tmp_path / "moodle"
    download.mkdir()
    (download / "Ann Lee_1001_assignsubmission_file_add.py").write_text(BEN_ADD)
    (download / "Ann Lee_1001_assignsubmission_file_x_1002_assignsubmission_file_add.py").write_text(
        "def add(x, y):\n    return 0.0\n")
    (download / "Ben Ng_1002_assignsubmission_file_add.py").write_text(SOLUTIONS["add.py"])
    book = tmp_path / "class.sqlite"
    batch(download, course, book, "--seed", "5")
    export = run_grade("export", str(book), "--format", "csv")
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(export.stdout))}
    assert set(rows) == {"1001", "1002"}
    assert (rows["1002"]["add"], rows["1002"]["status"]) == ("10", "graded"), rows["1002"]
    assert rows["1001"]["add"] == "2.5", "graded on its own add.py; the planted file is just another of its files"
