"""``grade check``: passes on the real course, fails with a message naming each kind of unsoundness."""

import os
import pty
import subprocess

import pytest
import yaml

from conftest import GRADE, ROOT, run_grade
from grader.course import load_course
from toycourse import DEFECTS, make_course


@pytest.mark.parametrize("name", ["exercise7", "exercise8"])
def test_check_passes_on_the_real_course(name):
    """Every CI run proves it: solutions full marks and stubs 'not started' at every configured device count."""
    exercise = load_course(str(ROOT / "course.yaml")).exercise(name)
    extra = sum(t.points for t in exercise.tasks if t.extra_credit)
    proc = run_grade("check", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{name} is sound" in proc.stdout
    assert exercise.max_points == 100
    assert f"solutions 100 / 100 + {extra:g} extra credit, stubs 0 / 100" in proc.stdout


def test_check_passes_on_a_sound_generated_course(tmp_path):
    course = make_course(tmp_path / "course")
    proc = run_grade("check", "--course", str(course))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ex1 is sound" in proc.stdout
    lines = proc.stderr.splitlines()  # a log (not a terminal) gets a line as each grading begins
    assert lines[:2] == ["checking ex1: grading the reference solutions ...", "checking ex1: grading the stubs ..."]


def test_check_on_a_terminal_shows_which_task_it_is_grading(tmp_path):
    """What a person at a terminal sees while the check runs: a live line per grading, cases counted."""
    course = make_course(tmp_path / "course")
    main, terminal = pty.openpty()
    proc = subprocess.Popen([*GRADE, "check", "--course", str(course)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=terminal, text=True)
    os.close(terminal)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal's other end closed: the check has ended
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=120) == 0, proc.stdout.read()
    os.close(main)
    text = seen.decode()
    assert "\rchecking ex1: the reference solutions: add 1/2 cases" in text
    assert "\rchecking ex1: the stubs: scale 1/1 cases" in text


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_check_names_what_is_unsound(tmp_path, defect):
    course = make_course(tmp_path / "course", defect)
    proc = run_grade("check", "ex1", "--course", str(course))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ex1 is not sound, 1 problem:" in proc.stdout
    assert DEFECTS[defect] in proc.stdout


def test_check_of_an_unloadable_course_is_a_course_error(tmp_path):
    course = make_course(tmp_path / "course")
    rubric = yaml.safe_load((course / "course.yaml").read_text())
    del rubric["exercises"]["ex1"]["tasks"][0]["hint"]
    (course / "course.yaml").write_text(yaml.safe_dump(rubric))
    proc = run_grade("check", "--course", str(course))
    assert proc.returncode == 2
    assert "a key 'hint'" in proc.stderr
