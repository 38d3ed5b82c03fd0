"""``grade check``: prove an exercise sound before students see it.

Sound means: the reference solutions score full marks and the stubs score zero, on every task and
at every configured device count; every test file of the suite belongs to a task and every task
has tests; every weight in course.yaml names a test that exists; every task is worth points. Each
problem is one sentence that names the task, file or test and says what to fix.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from grader.grading import reference_figures, runner, scoring
from grader.grading.pipeline import grade_submission
from grader.grading.progress import RunProgress
from grader.grading.workspace import Workspace
from grader.course import Course, Exercise
from grader.layout import plural


@dataclass
class CheckResult:
    exercise: Exercise
    seed: int
    solutions: scoring.Score | None = None
    stubs: scoring.Score | None = None
    problems: list[str] = field(default_factory=list)


def _rel(course: Course, path: str) -> str:
    return os.path.relpath(path, course.root)


def rubric_problems(course: Course, exercise: Exercise) -> list[str]:
    """What is wrong between course.yaml and the files on disk, found without grading anything."""
    problems = []
    suite = os.path.join(course.root, exercise.suite)
    for kind, folder in (("hidden suite", exercise.suite), ("stubs", exercise.stubs),
                         ("solutions", exercise.solutions)):
        if not os.path.isdir(os.path.join(course.root, folder)):
            problems.append(f"the {kind} folder {folder}/ does not exist")
    claimed = {f for t in exercise.tasks for f in t.files}
    for path in sorted(glob.glob(os.path.join(suite, "test_*.py"))):
        if os.path.basename(path) not in claimed:
            problems.append(f"{_rel(course, path)} belongs to no task: list it under a task's files in "
                            "course.yaml, or name it test_<task>.py")
    for t in exercise.tasks:
        if t.points <= 0:
            problems.append(f"task {t.id} is worth {t.points:g} points; give it points or remove it")
    if exercise.max_points <= 0:
        problems.append(f"{exercise.name} is worth no points: every task is extra credit or worth 0")
    return problems


def _first_failure(ts: scoring.TaskScore) -> str:
    return f"{ts.status}: {ts.reason}" if ts.reason else ts.status


def _no_tests(course: Course, exercise: Exercise, task) -> str:
    paths = [os.path.join(course.root, exercise.suite, f) for f in task.files]
    missing = [_rel(course, p) for p in paths if not os.path.isfile(p)]
    if missing:
        return f"task {task.id} has no tests: {', '.join(missing)} does not exist"
    return f"task {task.id} has no tests: {', '.join(_rel(course, p) for p in paths)} defines none"


def run_problems(course: Course, exercise: Exercise, sol: scoring.Score, stub: scoring.Score) -> list[str]:
    """What grading the solutions and the stubs showed to be wrong."""
    problems = []
    for ts in sol.tasks:
        names = {c.test for c in ts.cases}
        if not ts.cases:
            problems.append(_no_tests(course, exercise, ts.task))
            continue
        for name in sorted(set(ts.task.tests) - names):
            problems.append(f"course.yaml sets a rule for test {name} of task {ts.task.id}, but no such test exists "
                            f"in {', '.join(ts.task.files)}")
        skipped = [c for c in ts.cases if c.outcome == "skipped"]
        if skipped:
            problems.append(f"task {ts.task.id}: {plural(len(skipped), 'case')} could not run here, so the task is "
                            f"unchecked at device counts {sorted({c.devices for c in skipped})}: {skipped[0].message}")
        elif ts.score < ts.max_score:
            problems.append(f"the reference solution scores {ts.score:g} / {ts.max_score:g} on task {ts.task.id} "
                            f"({_first_failure(ts)})")
    for ts in stub.tasks:
        if ts.score > 0:
            passed = sorted({c.test for c in ts.cases if c.outcome == "passed"})
            problems.append(f"the stub scores {ts.score:g} / {ts.max_score:g} on task {ts.task.id}: "
                            f"{', '.join(passed)} {'passes' if len(passed) == 1 else 'pass'} without the task "
                            "being done; a stub must score zero")
        elif ts.cases and ts.status != "not started":
            problems.append(f"the stub of task {ts.task.id} is {ts.status}, not 'not started' ({ts.reason}); "
                            "a stub must import cleanly and raise NotImplementedError")
    return problems


def check_exercise(course: Course, exercise: Exercise, devices=None, seed: int | None = None,
                   progress: Callable[[str], RunProgress] | None = None) -> CheckResult:
    """Check one exercise: the rubric against the files, then a grading of solutions and stubs.

    ``progress(what)``, if given, is called as the grading of ``what`` ("the reference solutions",
    "the stubs") begins and returns what shows that grading's progress.
    """
    seed = runner.new_seed() if seed is None else seed
    result = CheckResult(exercise, seed, problems=rubric_problems(course, exercise))
    folders = {"the reference solutions": exercise.solutions, "the stubs": exercise.stubs}
    paths = [os.path.join(course.root, f) for f in (*folders.values(), exercise.suite)]
    if not all(os.path.isdir(p) for p in paths):
        return result
    scores = []
    for what, folder in folders.items():
        shown = progress(what) if progress else None
        space = Workspace(trusted=True)  # the course's own code: what its workers compile goes to the shared cache
        try:
            scores.append(grade_submission(course, exercise, os.path.join(course.root, folder), devices=devices,
                                           seed=seed, progress=shown, workspace=space).score)
        finally:
            space.close()
            if shown:
                shown.clear()
    result.solutions, result.stubs = scores
    result.problems += run_problems(course, exercise, result.solutions, result.stubs)
    if not result.problems and devices is None:  # every device count: the suite asked for every figure it needs
        solutions, suite = os.path.join(course.root, exercise.solutions), os.path.join(course.root, exercise.suite)
        reference_figures.mark_checked(reference_figures.kept_folder(course.root, exercise.name, solutions, suite))
    return result
