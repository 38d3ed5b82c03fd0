"""A throwaway course written into a temporary folder: course.yaml, stubs, solutions and a suite.

Its tasks are plain Python (no JAX in the student code), so grading it is quick, and using it
proves the instructor commands work for any course, not only exercise 7. ``defects`` break it in
the ways ``grade check`` must catch.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

EXERCISE = "ex1"

TASKS = [
    {"id": "add", "title": "Add two numbers", "points": 10, "hint": "Return x + y.",
     "tests": {"test_add_random": {"weight": 3, "visibility": "hidden"}}},
    {"id": "scale", "title": "Scale a vector", "points": 5, "hint": "Multiply every entry by the factor.",
     "extra_credit": True},
]

SUITE = {
    "test_add.py": """
        from grader.suite import expect_close


        def test_add_small(student):
            expect_close(student.call("add.add", 2.0, 3.0), 5.0, what="add(2, 3)")


        def test_add_random(student, rng):
            x, y = rng.normal(size=2)
            expect_close(student.call("add.add", x, y), x + y, what="add(x, y)")
        """,
    "test_scale.py": """
        import numpy as np

        from grader.suite import expect_close


        def test_scale(student, rng):
            v = rng.normal(size=5)
            expect_close(student.call("scale.scale", v, 3.0), 3.0 * v, what="scale(v, 3)")
        """,
}

SOLUTIONS = {
    "add.py": "def add(x, y):\n    return x + y\n",
    "scale.py": "def scale(v, factor):\n    return v * factor\n",
}

STUBS = {
    "add.py": 'def add(x, y):\n    """Return x + y."""\n    raise NotImplementedError("add")\n',
    "scale.py": 'def scale(v, factor):\n    """Return v times factor."""\n    raise NotImplementedError("scale")\n',
}

# Each defect is a change to the course and a phrase that grade check's report must contain.
DEFECTS = {
    "stub_scores": "the stub scores 5 / 5 on task scale",
    "solution_fails": "the reference solution scores 0 / 10 on task add",
    "unmapped_test_file": "tests/ex1/test_orphan.py belongs to no task",
    "task_without_tests": "task mul has no tests: tests/ex1/test_mul.py does not exist",
    "rule_for_missing_test": "no such test exists",
    "stub_broken": "the stub of task add is import error, not 'not started'",
}


def write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


def make_course(root: Path, defect: str | None = None) -> Path:
    """Write the toy course under ``root`` (optionally with one of DEFECTS); returns ``root``."""
    tasks = [dict(t) for t in TASKS]
    suite, solutions, stubs = dict(SUITE), dict(SOLUTIONS), dict(STUBS)
    if defect == "stub_scores":
        stubs["scale.py"] = SOLUTIONS["scale.py"]
    elif defect == "solution_fails":
        solutions["add.py"] = "def add(x, y):\n    return x - y\n"
    elif defect == "unmapped_test_file":
        suite["test_orphan.py"] = "def test_orphan():\n    pass\n"
    elif defect == "task_without_tests":
        tasks.append({"id": "mul", "title": "Multiply", "points": 5, "hint": "Return x * y."})
    elif defect == "stub_broken":
        stubs["add.py"] = "def add(x, y)\n    raise NotImplementedError\n"
    elif defect == "rule_for_missing_test":
        tasks[0] = dict(tasks[0], tests={"test_add_typo": {"weight": 2}})
    course = {"course": "toy-course", "defaults": {"devices": [1], "timeout_s": 60},
              "exercises": {EXERCISE: {"title": "A toy exercise", "tasks": tasks}}}
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.yaml").write_text(yaml.safe_dump(course, sort_keys=False))
    write_files(root / "tests" / EXERCISE, suite)
    write_files(root / "solutions" / EXERCISE, solutions)
    write_files(root / "exercises" / EXERCISE, stubs)
    return root
