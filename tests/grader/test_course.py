"""course.yaml validation: every mistake is named with file, line, key and what was expected."""

from __future__ import annotations

import ast
import textwrap

import pytest
from conftest import ROOT

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
    ("timeout_s: 5,", "timeout_s: 5, local_timeout_s: 0,",
     "course.yaml:2: defaults.local_timeout_s: expected a number > 0, got 0"),
    ("timeout_s: 5,", "timeout_s: 5, local_timeout_s: 9,",
     "course.yaml:2: defaults.local_timeout_s: expected a number > 0 and at most timeout_s (5), got 9"),
    ("        devices: [4, 1]\n", "        devices: [4, 1]\n        local_timeout_s: 6\n",
     "course.yaml:18: exercises.ex1.tasks[1].local_timeout_s: expected a number > 0 and at most timeout_s (5), got 6"),
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
    with pytest.raises(UsageError, match=r"no task 'alpah' in ex1 \(did you mean alpha\?\); known: alpha, beta"):
        course.exercise("ex1").task("alpah")


def test_course_is_found_walking_up(tmp_path):
    write(tmp_path, GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_course(str(deep)).name == "demo"
    with pytest.raises(UsageError, match="no course.yaml found"):
        find_course("/")


def test_local_limits_are_inherited_capped_and_apply_only_to_a_local_run(tmp_path):
    text = GOOD.replace("timeout_s: 5,", "timeout_s: 5, local_timeout_s: 2,").replace(
        "        devices: [4, 1]\n", "        devices: [4, 1]\n        timeout_s: 1.5\n")
    ex = load_course(write(tmp_path, text)).exercise("ex1")
    alpha, beta = ex.tasks
    assert (alpha.timeout_s, alpha.local_timeout_s) == (5, 2)
    assert (beta.timeout_s, beta.local_timeout_s) == (1.5, 1.5), "never longer than the task's own limit"
    assert [t.timeout_s for t in ex.local().tasks] == [2, 1.5]
    assert [t.timeout_s for t in ex.tasks] == [5, 1.5], "the autograder keeps timeout_s"
    plain = load_course(write(tmp_path, GOOD)).exercise("ex1")
    assert plain.local().tasks == plain.tasks, "without local_timeout_s a local run has the same limits"


def test_the_local_limit_does_not_touch_the_autograders_fingerprints(tmp_path):
    """A batch grades with timeout_s, so changing only local_timeout_s must not regrade a class."""
    from grader.classroom.fingerprint import task_fingerprints

    def prints(text):
        course = load_course(write(tmp_path, text))
        return task_fingerprints(course, course.exercise("ex1"), None)

    plain = prints(GOOD)
    assert prints(GOOD.replace("timeout_s: 5,", "timeout_s: 5, local_timeout_s: 2,")) == plain
    assert prints(GOOD.replace("timeout_s: 5,", "timeout_s: 6,")) != plain


def _devices_marks(suite) -> dict[str, tuple[int, ...] | None]:
    """Each test function of a suite folder and the device counts its ``pytest.mark.devices`` names (None: none)."""
    found = {}
    for path in suite.glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marks = [d for d in node.decorator_list if isinstance(d, ast.Call) and ast.unparse(d.func).endswith(
                    "mark.devices")]
                found[node.name] = tuple(ast.literal_eval(a) for a in marks[0].args) if marks else None
    return found


def test_the_real_course_grades_no_structural_check_on_one_device():
    # On one device every collective is the identity, which XLA drops: a program that communicates nothing
    # shows the same compiled program there as the right one, so a check of what a program communicates (the
    # rubric's after_due_date tests) earns a point only from 2 devices on.
    course = load_course(str(ROOT / "course.yaml"))
    checked = []
    for name, exercise in course.exercises.items():
        marks = _devices_marks(ROOT / exercise.suite)
        for task in exercise.tasks:
            for test, rule in task.tests.items():
                if rule.visibility == "after_due_date":
                    checked.append(test)
                    counts = set(task.devices) & set(marks[test] or task.devices)  # the marker picks among the task's
                    assert counts and 1 not in counts, f"{name}.{task.id}: {test} runs at {sorted(counts)} devices"
    assert len(checked) >= 17
