"""Tasks are graded in the order course.yaml lists them, the order the report shows them in."""

import os

from toycourse import EXERCISE, SOLUTIONS, STUBS, SUITE, TASKS, write_course

from grader.course import find_course
from grader.grading.runner import suite_files


def test_the_suite_runs_in_the_order_of_the_tasks(tmp_path):
    listed = [TASKS[1], TASKS[0]]  # scale before add: not the files' alphabetical order
    root = write_course(tmp_path, {"course": "toy", "exercises": {EXERCISE: {"title": "T", "tasks": listed}}},
                        SUITE, SOLUTIONS, STUBS)
    course = find_course(explicit=str(root))
    files = [os.path.basename(p) for p in suite_files(course, course.exercise(EXERCISE))]
    assert files == ["test_scale.py", "test_add.py"]
