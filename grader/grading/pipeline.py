"""Grading one submission from start to report, the one way every command does it.

``grade EXERCISE``, ``grade autograde`` and ``grade check`` all need the same chain: the JAX
version check, the submission located once, the run, the score, the notes the report carries. It
lives here so no caller reassembles it by hand.

Its imports stay at the top: scoring and every report format (report imports gradescope and junit)
are loaded before any worker runs student code, so none of them is read from disk afterwards.
"""

from __future__ import annotations

import dataclasses
import os

from grader import submission
from grader.course import Course, Exercise
from grader.errors import Interrupted
from grader.grading import confinement, runner, scoring, versions
from grader.grading.functions import task_functions
from grader.grading.progress import RunProgress
from grader.grading.report import Report
from grader.grading.workspace import Workspace
from grader.notebook import cells
from grader.workers.backends import Backend

PUBLIC_ONLY_NOTE = ("public tests only: the full suite, with any hidden tests, runs when you submit, "
                    "so your final score may differ")


def public_only_note(course: Course, exercise: Exercise) -> str:
    """What a student bundle's report says about the cases it cannot run: how many, for which tasks."""
    counts = {t.id: course.release.hidden_cases.get(t.id, 0) for t in exercise.tasks}
    total = sum(counts.values())
    if not total:
        return PUBLIC_ONLY_NOTE
    per_task = ", ".join(f"{n} in {task}" for task, n in counts.items() if n)  # "8 in devices", not "devices 8"
    return (f"public tests only: {total} hidden case{'s' if total != 1 else ''} ({per_task}) are not in this "
            "bundle; they are graded when you submit, so your final score may differ")


def grade_submission(course: Course, exercise: Exercise, path: str, *, devices=None, seed: int | None = None,
                     backend: str | Backend | None = None, timeout_s: float | None = None,
                     allow_jax_mismatch: bool = False, require_sandbox: str = "none",
                     workspace: Workspace | None = None, progress: RunProgress | None = None) -> Report:
    """Grade the submission at ``path`` against ``exercise`` (cut to the graded tasks with Exercise.only).

    ``require_sandbox``: refuse (SandboxRefused, a usage error) a machine, and then a run, that
    cannot confine student code that much. ``workspace``: one kept between runs (watch mode), else
    the run makes its own. Interrupted (Ctrl-C, SIGTERM) leaves with the partial Report, marked
    interrupted, as its ``partial``.
    """
    confinement.require_here(require_sandbox)
    notes = versions.check_jax(course, allow_jax_mismatch)
    if course.release and course.release.public_only:
        notes.append(public_only_note(course, exercise))
    stubs = os.path.join(course.root, exercise.stubs)
    with cells.as_folder(path, submission.expected_modules(stubs)) as (folder, notebook_note):
        found = submission.find(folder, exercise.name, stubs)
        for note in (found.note, notebook_note if exercise.complete else ""):
            if note:
                notes.insert(0, note)
        if folder != path:  # a notebook: the report names it, not the folder its cells were written to
            found = dataclasses.replace(found, given=os.path.abspath(path))
        try:
            run = runner.grade(course, exercise, found, devices=devices, seed=seed,
                               backend=backend or course.backend, timeout_s=timeout_s,
                               require_sandbox=require_sandbox, workspace=workspace, progress=progress)
        except Interrupted as stop:
            stop.partial = Report(stop.partial, scoring.score(exercise, stop.partial.cases, stop.partial.unfinished),
                                  course.name, notes)
            raise
    functions = task_functions(stubs, exercise)
    return Report(run, scoring.score(exercise, run.cases, functions=functions), course.name, notes)
