"""What a stub says when a student runs it: ``python exercises/<exercise>/<module>.py``.

A stub defines functions and does nothing when run, which leaves a student wondering whether it
worked. Each stub's ``if __name__ == "__main__":`` block calls :func:`explain` instead, which says
how to grade the task and how to get several devices in one's own script, as the grader's workers
do. It reads course.yaml when the stub is inside a course, to name the right exercise and tasks;
elsewhere it falls back on the folder and file names.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

DEVICES_RECIPE = 'jax.config.update("jax_num_cpu_devices", 4)'


def _tasks_in_course(folder: str, module: str) -> tuple[str, list[str], str] | None:
    """(exercise, task ids, course root) of the course exercise whose stubs folder holds ``module``;
    None outside a course."""
    from grader.course import find_course
    from grader.errors import UsageError

    try:
        course = find_course(folder)
    except UsageError:
        return None
    for exercise in course.exercises.values():
        if os.path.realpath(os.path.join(course.root, exercise.stubs)) == os.path.realpath(folder):
            return exercise.name, [t.id for t in exercise.tasks_of_module(module)], course.root
    return None


def _shown(path: str) -> str:
    """A path as one would type it here: relative when below this folder, else absolute."""
    relative = os.path.relpath(path)
    return shlex.quote(path if relative.startswith("..") else relative)


def grade_program() -> str:
    """How to run ``grade`` from here, for the Python running now: ``grade`` when that is what the shell
    finds (an activated venv), else the script beside this interpreter (``.venv/bin/grade``)."""
    beside = os.path.join(os.path.dirname(sys.executable), "grade")
    found = shutil.which("grade")
    if found and os.path.realpath(found) == os.path.realpath(beside):
        return "grade"
    return _shown(beside) if os.path.isfile(beside) else f"{shlex.quote(sys.executable)} -m grader"


def how_to_grade(path: str) -> str:
    """Two lines for the stub at ``path``: the grade command for its tasks, as it runs from this folder
    with this Python, and the devices recipe."""
    folder, name = os.path.split(os.path.abspath(path))
    module = os.path.splitext(name)[0]
    exercise, tasks, root = _tasks_in_course(folder, module) or (os.path.basename(folder), [module], None)
    command = f"{grade_program()} {exercise}" + "".join(f" --task {t}" for t in tasks)
    if root and os.path.relpath(os.getcwd(), root).startswith(".."):  # grade finds the course from where it runs
        command += f" --course {_shown(root)}"
    return (f"Grade {name} with: {command}   (add --watch to regrade it each time you save)\n"
            f"To try it on 4 emulated CPU devices in your own script or REPL: {DEVICES_RECIPE} "
            "before the first JAX call.")


def explain(path: str) -> None:
    print(how_to_grade(path))
