"""The course leaves a run as it entered it: a change to course.yaml or the suite is a grader error, never a score."""

from __future__ import annotations

import pytest

from conftest import run_grade
from grader.errors import GraderError
from grader.grading import integrity
from toycourse import EXERCISE, SOLUTIONS, make_course


def test_a_changed_added_or_removed_file_is_named(tmp_path):
    course = make_course(tmp_path / "course")
    guarded = [str(course / "course.yaml"), str(course / "tests")]
    before = integrity.snapshot(guarded)
    integrity.verify(before, guarded)  # nothing changed: no error
    (course / "tests" / EXERCISE / "test_add.py").write_text("def test_free():\n    pass\n")
    (course / "tests" / EXERCISE / "__pycache__").mkdir()
    (course / "tests" / EXERCISE / "__pycache__" / "test_add.cpython-311.pyc").write_bytes(b"forged")
    (course / "tests" / EXERCISE / "test_scale.py").unlink()
    with pytest.raises(GraderError) as error:
        integrity.verify(before, guarded)
    message = str(error.value)
    assert message.startswith("the course changed while it was being graded (changed: ")
    assert "test_add.py; added: " in message and "__pycache__/test_add.cpython-311.pyc" in message
    assert "removed: " in message and "test_scale.py" in message


def _rewriting_submission(tmp_path):
    """A toy course and a submission whose add() empties the course's test_scale.py; (course, submission, target)."""
    course = make_course(tmp_path / "course")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "scale.py").write_text(SOLUTIONS["scale.py"])
    target = course / "tests" / EXERCISE / "test_scale.py"
    (submission / "add.py").write_text(f"def add(x, y):\n    open({str(target)!r}, 'w').write('')\n    return x + y\n")
    return course, submission, target


def test_a_submission_that_rewrites_the_suite_unconfined_voids_the_run(tmp_path):
    """With the sandbox switched off (a machine without it), the rewrite happens, and the run ends in exit 3."""
    course, submission, target = _rewriting_submission(tmp_path)
    proc = run_grade(EXERCISE, "--submission", str(submission), cwd=course, env={"GRADE_SANDBOX": "0"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"the course changed while it was being graded (changed: {target})" in proc.stderr
    assert proc.stdout == ""


def test_the_same_submission_confined_changes_nothing(tmp_path):
    course, submission, target = _rewriting_submission(tmp_path)
    before = target.read_text()
    proc = run_grade(EXERCISE, "--submission", str(submission), cwd=course)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == before
    assert "PermissionError" in proc.stdout
