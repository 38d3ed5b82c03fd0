"""course.yaml validation: every mistake is named with file, line, key and what was expected."""

from __future__ import annotations

import textwrap

import pytest

from grader.course import CourseError, find_course, load_course
from grader.errors import UsageError

GOOD = """\
course: demo
defaults: {devices: [1, 2], timeout_s: 5, memory_mb: 2048}
exercises:
  ex1:
    title: Demo
    tasks:
      - id: alpha
        title: Alpha
        points: 10
        hint: do alpha
        tests:
          test_alpha_hidden: {weight: 2, visibility: hidden}
      - id: beta
        title: Beta
        points: 5
        hint: do beta
        devices: [4, 1]
        extra_credit: true
"""


def write(tmp_path, text):
    path = tmp_path / "course.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_good_course_loads_with_defaults_and_overrides(tmp_path):
    course = load_course(write(tmp_path, GOOD))
    ex = course.exercise("ex1")
    alpha, beta = ex.tasks
    assert (alpha.devices, alpha.timeout_s, alpha.files) == ((1, 2), 5, ("test_alpha.py",))
    assert alpha.rule("test_alpha_hidden").weight == 2 and alpha.rule("test_alpha_hidden").visibility == "hidden"
    assert alpha.rule("test_other").weight == 1 and alpha.rule("test_other").visibility == "visible"
    assert beta.devices == (1, 4) and beta.extra_credit
    assert ex.max_points == 10
    assert course.memory_mb == 2048
    assert ex.task_for_file("test_beta.py") is beta


@pytest.mark.parametrize("old, new, expected", [
    ("points: 10", "points: ten", "course.yaml:9: exercises.ex1.tasks[0].points: expected a number >= 0, got 'ten'"),
    ("devices: [1, 2], ", "devices: [0], ", "course.yaml:2: defaults.devices: expected a non-empty list of device counts"),
    ("hint: do beta", "hint: ''", "course.yaml:16: exercises.ex1.tasks[1].hint: expected a non-empty string"),
    ("visibility: hidden", "visibility: secret", "exercises.ex1.tasks[0].tests.test_alpha_hidden.visibility: "
                                                  "expected one of visible, hidden, after_due_date, after_published"),
    ("        title: Beta\n", "", "course.yaml:13: exercises.ex1.tasks[1]: expected a key 'title'"),
    ("extra_credit: true", "extra_credit: maybe", "exercises.ex1.tasks[1].extra_credit: expected true or false"),
    ("        hint: do alpha\n", "        hint: do alpha\n        pionts: 3\n",
     "course.yaml:11: exercises.ex1.tasks[0].pionts: expected one of the keys id, title, points"),
    ("id: beta", "id: alpha", "course.yaml:13: exercises.ex1.tasks[1].id: expected a task id not used before"),
    ("timeout_s: 5", "timeout_s: -1", "defaults.timeout_s: expected a number > 0, got -1"),
])
def test_each_mistake_is_named(tmp_path, old, new, expected):
    assert old in GOOD
    with pytest.raises(CourseError) as err:
        load_course(write(tmp_path, GOOD.replace(old, new, 1)))
    assert expected in str(err.value)


def test_invalid_yaml_names_the_line(tmp_path):
    with pytest.raises(CourseError, match=r"course.yaml:3: not valid YAML: .*'\\t'"):
        load_course(write(tmp_path, "course: x\nexercises:\n\tex1: {}\n"))


def test_unknown_exercise_and_task_list_the_known_ones(tmp_path):
    course = load_course(write(tmp_path, GOOD))
    with pytest.raises(UsageError, match=r"no exercise 'exercise9'; known: ex1"):
        course.exercise("exercise9")
    with pytest.raises(UsageError, match=r"no task 'gamma' in ex1; known: alpha, beta"):
        course.exercise("ex1").task("gamma")


def test_course_is_found_walking_up(tmp_path):
    write(tmp_path, GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_course(str(deep)).name == "demo"
    with pytest.raises(UsageError, match="no course.yaml found"):
        find_course("/")
