"""Regrade only what changed: per-task fingerprints decide which task results of a gradebook stand.

One class of the toy course (toycourse.py: tasks add and scale) is graded once; each test copies the
course and the gradebook, changes one thing and reruns the batch. A task result that was reused is
the stored one to the byte (its cases' durations included), one graded again is not.
"""

import shutil

import pytest
import yaml

from classroom import batch, rows, toy_class
from conftest import run_grade
from grader.classroom import fingerprint, regrade
from grader.classroom.gradebook import Gradebook
from grader.course import load_course
from toycourse import EXERCISE, SOLUTIONS

BEN_ADD = "def add(x, y):\n    return 5.0 if (x, y) == (2.0, 3.0) else 0.0\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("regrade")
    course, subs = toy_class(root, {"ann": {f"{EXERCISE}/{n}": t for n, t in SOLUTIONS.items()},
                                    "ben": {f"{EXERCISE}/add.py": BEN_ADD}})
    book = root / "class.sqlite"
    batch(subs, course, book, "--seed", "5")
    return course, subs, book


@pytest.fixture
def copy(graded, tmp_path):
    course, subs, book = graded
    shutil.copytree(course, tmp_path / "course")
    shutil.copy(book, tmp_path / "class.sqlite")
    return tmp_path / "course", subs, tmp_path / "class.sqlite"


def reports(book) -> dict[str, dict]:
    with Gradebook(str(book), readonly=True) as gb:
        return {r.student: r.report for r in gb.results()}


def task(report, task_id):
    return next(t for t in report["tasks"] if t["id"] == task_id)


def test_fixing_one_test_regrades_that_task_for_everyone_and_reuses_the_rest(graded, copy):
    _, _, book = graded
    course, subs, copied = copy
    suite = course / "tests" / EXERCISE / "test_scale.py"
    suite.write_text(suite.read_text().replace("size=5", "size=6"))
    history = rows(copied, "history")
    proc = batch(subs, course, copied)
    assert "grading 2, 0 already graded" in proc.stderr
    assert "reused 0 results whole; task scale graded again for 2 (their other tasks reused); 0 graded in full" \
        in proc.stdout
    before, after = reports(book), reports(copied)
    for student in ("ann", "ben"):
        assert task(after[student], "add") == task(before[student], "add"), "add was reused as stored"
        assert task(after[student], "scale") != task(before[student], "scale"), "scale was graded again"
        assert after[student]["reused_tasks"] == ["add"]
        assert [t["id"] for t in after[student]["tasks"]] == ["add", "scale"]
    assert (after["ann"]["score"], after["ben"]["score"]) == (15.0, 2.5)
    assert after["ann"]["max_score"] == before["ann"]["max_score"] == 10.0
    assert len(rows(copied, "history")) == len(history) + 2


def test_regrade_task_forces_one_task(graded, copy):
    _, _, book = graded
    course, subs, copied = copy
    proc = batch(subs, course, copied, "--regrade", "add")
    assert "task add graded again for 2" in proc.stdout
    before, after = reports(book), reports(copied)
    assert task(after["ann"], "scale") == task(before["ann"], "scale")
    assert task(after["ann"], "add") != task(before["ann"], "add")


def test_regrade_of_an_unknown_task_is_a_usage_error(copy):
    course, subs, copied = copy
    proc = run_grade("batch", str(subs), "--exercise", EXERCISE, "--course", str(course), "--gradebook",
                     str(copied), "--regrade", "mul")
    assert proc.returncode == 2 and "--regrade mul: no task mul among the graded tasks (add, scale)" in proc.stderr


def test_a_change_elsewhere_in_course_yaml_regrades_nothing(graded, copy):
    course, subs, copied = copy
    data = yaml.safe_load((course / "course.yaml").read_text())
    data["exercises"][EXERCISE]["title"] = "A renamed exercise"
    data["exercises"][EXERCISE]["due"] = "2030-01-01"
    (course / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    proc = batch(subs, course, copied)
    assert "grading 0, 2 already graded" in proc.stderr and "reused 2 results whole; 0 graded in full" in proc.stdout


def test_a_changed_rubric_entry_regrades_its_task(graded, copy):
    course, subs, copied = copy
    data = yaml.safe_load((course / "course.yaml").read_text())
    data["exercises"][EXERCISE]["tasks"][0]["points"] = 20
    (course / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    proc = batch(subs, course, copied)
    assert "task add graded again for 2" in proc.stdout
    assert reports(copied)["ann"]["score"] == 25.0 and reports(copied)["ann"]["max_score"] == 20.0


def test_a_shared_suite_file_regrades_every_task(graded, copy):
    course, subs, copied = copy
    (course / "tests" / EXERCISE / "probes.py").write_text("def helper(x):\n    return x\n")
    proc = batch(subs, course, copied)
    assert "reused 0 results whole; 2 graded in full" in proc.stdout
    assert "reused_tasks" not in reports(copied)["ann"]


def test_grading_fewer_tasks_does_not_keep_the_others_in_the_totals(graded, copy):
    course, subs, copied = copy
    batch(subs, course, copied, "--task", "add")
    ann = reports(copied)["ann"]
    assert [t["id"] for t in ann["tasks"]] == ["add"] and ann["score"] == 10.0
    batch(subs, course, copied)  # back to every task: scale is graded, add is reused
    assert reports(copied)["ann"]["reused_tasks"] == ["add"]


def test_fingerprints_are_per_task_and_follow_their_own_files(graded, tmp_path):
    course_dir, _, _ = graded
    shutil.copytree(course_dir, tmp_path / "c")
    course = load_course(str(tmp_path / "c" / "course.yaml"))
    exercise = course.exercise(EXERCISE)
    before = fingerprint.task_fingerprints(course, exercise, None)
    (tmp_path / "c" / "tests" / EXERCISE / "test_add.py").write_text("def test_add_small(student):\n    pass\n")
    after = fingerprint.task_fingerprints(course, exercise, None)
    assert after["scale"] == before["scale"] and after["add"] != before["add"]
    assert fingerprint.task_fingerprints(course, exercise, (1, 2))["scale"] != before["scale"]
    assert fingerprint.task_fingerprints(course, exercise, None, "gpu")["scale"] != before["scale"]


def test_a_join_recomputes_the_totals_from_the_tasks():
    previous = {"tasks": [{"id": "a", "score": 4.0, "max_score": 10.0, "points": 10.0, "extra_credit": False},
                          {"id": "b", "score": 1.0, "max_score": 5.0, "points": 5.0, "extra_credit": True}],
                regrade.FINGERPRINTS: {"a": "1", "b": "2"}}
    fresh = {"seed": 3, "tasks": [{"id": "a", "score": 10.0, "max_score": 8.0, "points": 10.0, "extra_credit": False}],
             regrade.FINGERPRINTS: {"a": "9"}}
    joined = regrade.join(previous, fresh, ["a", "b"])
    assert (joined["score"], joined["max_score"], joined["full_max_score"], joined["percent"]) == (11.0, 8.0, 10.0,
                                                                                                    137.5)
    assert joined[regrade.FINGERPRINTS] == {"a": "9", "b": "2"} and joined["reused_tasks"] == ["b"]
