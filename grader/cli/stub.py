"""What a stub says when a student runs it: ``python exercises/<exercise>/<module>.py``.

A stub defines functions and does nothing when run, which leaves a student wondering whether it
worked. Each stub's ``if __name__ == "__main__":`` block calls :func:`explain` instead, which says
how to grade the task and how to get several devices in one's own script, as the grader's workers
do. It reads course.yaml when the stub is inside a course, to name the right exercise and tasks;
elsewhere it falls back on the folder and file names.
"""

from __future__ import annotations

import os

DEVICES_RECIPE = 'jax.config.update("jax_num_cpu_devices", 4)'


def _tasks_in_course(folder: str, module: str) -> tuple[str, list[str]] | None:
    """(exercise, task ids) of the course exercise whose stubs folder holds ``module``; None outside a course."""
    from grader.course import find_course
    from grader.errors import UsageError

    try:
        course = find_course(folder)
    except UsageError:
        return None
    for exercise in course.exercises.values():
        if os.path.realpath(os.path.join(course.root, exercise.stubs)) == os.path.realpath(folder):
            return exercise.name, [t.id for t in exercise.tasks if t.id == module or t.id.startswith(module + "_")]
    return None


def how_to_grade(path: str) -> str:
    """Two lines for the stub at ``path``: the grade command for its tasks, and the devices recipe."""
    folder, name = os.path.split(os.path.abspath(path))
    module = os.path.splitext(name)[0]
    exercise, tasks = _tasks_in_course(folder, module) or (os.path.basename(folder), [module])
    command = f"grade {exercise}" + "".join(f" --task {t}" for t in tasks)
    return (f"Grade {name} with: {command}   (add --watch to regrade it each time you save)\n"
            f"To try it on 4 emulated CPU devices in your own script or REPL: {DEVICES_RECIPE} "
            "before the first JAX call.")


def explain(path: str) -> None:
    print(how_to_grade(path))
