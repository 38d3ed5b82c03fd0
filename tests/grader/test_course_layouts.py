"""course.yaml's multi-process layouts: ``processes: [2x2, 4x1]`` (processes x local devices)."""

import textwrap

import pytest

from grader.course import CourseError, Layout, load_course


def _load(tmp_path, task_lines: str):
    path = tmp_path / "course.yaml"
    path.write_text(textwrap.dedent("""\
        course: c
        exercises:
          ex:
            title: Ex
            tasks:
              - id: t
                title: T
                points: 5
                hint: h
        """) + textwrap.indent(textwrap.dedent(task_lines), " " * 8))
    return load_course(str(path))


def test_layouts_are_read_sorted_and_replace_device_counts(tmp_path):
    task = _load(tmp_path, "processes: [4x1, 2x2, 2x2]\n").exercise("ex").task("t")
    assert task.processes == (Layout(devices=2, processes=2), Layout(devices=1, processes=4))
    assert [lay.spec for lay in task.processes] == ["2x2", "4x1"]
    assert [str(lay) for lay in task.processes] == ["2 processes x 2 devices", "4 processes x 1 device"]
    assert task.devices == ()


def test_the_real_course_grades_multihost_at_2x2_and_4x1():
    from conftest import ROOT

    task = load_course(str(ROOT / "course.yaml")).exercise("exercise7").task("multihost")
    assert task.extra_credit and task.points == 5
    assert task.processes == (Layout(devices=2, processes=2), Layout(devices=1, processes=4))


@pytest.mark.parametrize("value", ["[2by2]", "[2x0]", "2x2", "[]", "[2]"])
def test_a_bad_layout_names_file_line_key_and_the_expected_form(tmp_path, value):
    with pytest.raises(CourseError) as err:
        _load(tmp_path, f"processes: {value}\n")
    assert str(err.value).startswith(f"{tmp_path / 'course.yaml'}:10: exercises.ex.tasks[0].processes: expected a "
                                     "non-empty list of layouts PxD (processes x devices per process) such as "
                                     "[2x2, 4x1], got ")


def test_devices_and_processes_together_are_refused(tmp_path):
    with pytest.raises(CourseError, match=r":11: exercises\.ex\.tasks\[0\]\.processes: expected either devices or "
                                          r"processes in one task, not both"):
        _load(tmp_path, "devices: [1, 2]\nprocesses: [2x2]\n")
