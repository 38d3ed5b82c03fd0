"""A newcomer's class of eight, graded once on the toy course, exported to every format and read back
by what reads each one, with the totals the gradebook holds.

Readers: csv and json (Python's), junitparser (a JUnit reader CI systems use; skipped where it is not
installed), Gradescope's documented results.json (tests/grader/gradescope_schema.py), Canvas's and
Moodle's import rules (Canvas: a row per student keyed by ID, marks as given, extra credit kept;
Moodle: a row per email, and no mark above the grade item's maximum unless the site allows it,
mod/grade/import "gradevaluetoobig"). The class: a solution with the extra credit, one without it, a
partial answer, an untouched stub, a zip, a .tar.gz, a notebook and a refused archive.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from gradescope_schema import validate

from classroom import folder, notebook, tar_archive, zip_archive
from conftest import run_grade
from grader.classroom.gradebook import GRADED, REFUSED, Gradebook
from toycourse import EXERCISE, SOLUTIONS, STUBS, make_course

BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"
CLASS = ["ann", "ben", "cat", "dee", "eli", "fay", "gus", "hal"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("consumers")
    course = make_course(root / "course")
    subs = root / "class"
    folder(subs, "ann", {f"{EXERCISE}/{n}": t for n, t in SOLUTIONS.items()})  # 10 + 5 extra credit
    folder(subs, "ben", {f"{EXERCISE}/add.py": SOLUTIONS["add.py"], f"{EXERCISE}/scale.py": STUBS["scale.py"]})
    folder(subs, "cat", {f"{EXERCISE}/add.py": BEN_ADD})
    folder(subs, "dee", {f"{EXERCISE}/{n}": t for n, t in STUBS.items()})
    zip_archive(subs / "eli.zip", {f"{EXERCISE}/add.py": SOLUTIONS["add.py"]})
    tar_archive(subs / "fay.tar.gz", {f"fay/{EXERCISE}/add.py": BEN_ADD, f"fay/{EXERCISE}/scale.py": SOLUTIONS["scale.py"]})
    notebook(subs / "gus.ipynb", {"add": SOLUTIONS["add.py"], "scale": SOLUTIONS["scale.py"]})
    zip_archive(subs / "hal.zip", {"../escape.py": "x = 1\n"})  # refused: 0
    book = root / "class.sqlite"
    proc = run_grade("batch", str(subs), "--exercise", EXERCISE, "--course", str(course), "--seed", "8",
                     "--jobs", "2", "--gradebook", str(book))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    roster = root / "roster.csv"
    roster.write_text("student,name,canvas_id,email\n" + "".join(
        f"{s},{s.title()} Doe,{100 + i},{s}@uni.edu\n" for i, s in enumerate(CLASS)))
    with Gradebook(str(book), readonly=True) as gb:
        results = {r.student: r for r in gb.results()}
        maximum = gb.meta_value("max_score")
    assert sorted(results) == CLASS and results["hal"].status == REFUSED
    assert results["ann"].score > maximum, "the class has one student above the maximum"
    return root, book, roster, results, maximum


def export(book, *args) -> tuple[str, str]:
    proc = run_grade("export", str(book), *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_csv_and_json_hold_the_gradebooks_totals(graded):
    _, book, _, results, _ = graded
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(export(book, "--format", "csv")[0]))}
    assert {s: float(r["total"]) for s, r in rows.items()} == {s: r.score for s, r in results.items()}
    data = json.loads(export(book, "--format", "json")[0])
    assert {e["student"]: e["score"] for e in data["students"]} == {s: r.score for s, r in results.items()}


def test_junit_reads_a_suite_per_student_with_each_case(graded):
    junitparser = pytest.importorskip("junitparser")
    _, book, _, results, _ = graded
    xml = junitparser.JUnitXml.fromstring(export(book, "--format", "junit")[0].encode())
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == set(results)
    for student, r in results.items():
        suite = suites[student]
        if r.status == GRADED:
            cases = [c for t in r.report["tasks"] for c in t["cases"]]
            assert suite.tests == len(cases)
            assert suite.failures == sum(c["outcome"] == "failed" for c in cases), student
        else:
            assert suite.errors == 1


def test_gradescope_records_each_total(graded, tmp_path):
    _, book, _, results, _ = graded
    export(book, "--format", "gradescope", "-o", str(tmp_path / "gs"))
    for student, r in results.items():
        data = json.loads((tmp_path / "gs" / student / "results.json").read_text())
        assert validate(data) == [] and data["score"] == r.score, student


def test_canvas_imports_every_total_extra_credit_included(graded):
    _, book, roster, results, maximum = graded
    table = list(csv.reader(io.StringIO(export(book, "--format", "canvas", "--roster", str(roster),
                                               "--assignment", "Exercise 1 (7001)")[0])))
    assert table[1][0] == "Points Possible" and float(table[1][-1]) == maximum
    marks = {row[1]: float(row[-1]) for row in table[2:]}
    assert marks == {str(100 + i): results[s].score for i, s in enumerate(CLASS)}


def test_moodle_imports_every_total_within_the_maximum_and_the_extra_in_its_column(graded):
    _, book, roster, results, maximum = graded
    text, stderr = export(book, "--format", "moodle", "--roster", str(roster), "--above-max", "column")
    rows = {row["Email address"]: row for row in csv.DictReader(io.StringIO(text))}
    for student, r in results.items():
        row = rows[f"{student}@uni.edu"]
        mark, extra = float(row[EXERCISE]), float(row[f"{EXERCISE} extra credit"])
        assert mark <= maximum and mark + extra == pytest.approx(r.score), student  # Moodle's import takes it
    assert "2 marks above the maximum 10: ann (15), gus (15)" in stderr
