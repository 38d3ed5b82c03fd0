"""``grade check [EXERCISE]``: is the course sound? (see grader/check.py for what that means).

Exit codes: 0 sound, 1 the check ran and found problems (like a score below --fail-under: the
command worked, the course did not pass), 2 the course could not be loaded (course.yaml errors,
including a task without title or hint), 3 the grader itself failed.
"""

from __future__ import annotations

import sys

import click

from grader.errors import EXIT_BELOW
from grader.grading import confinement


def _points(score) -> str:
    return score.points_text() if score else "not graded"


def _check(exercise_name, devices_text, seed, course_path):
    from grader.authoring.check import check_exercise
    from grader.cli.options import parse_devices
    from grader.course import find_course
    from grader.grading.progress import RunProgress

    course = find_course(explicit=course_path)
    names = [exercise_name] if exercise_name else list(course.exercises)
    devices = parse_devices(devices_text)
    unsound = 0
    for name in names:
        exercise = course.exercise(name)

        def progress(what: str, name=name) -> RunProgress:
            click.echo(f"checking {name}: grading {what} ...", err=True)  # a log gets a line per grading
            return RunProgress(sys.stderr, f"checking {name}: {what}")  # a terminal also a live line

        result = check_exercise(course, exercise, devices=devices, seed=seed, progress=progress)
        counts = devices or sorted({d for t in exercise.tasks for d in t.devices})
        click.echo(f"{name}: solutions {_points(result.solutions)}, stubs {_points(result.stubs)} "
                   f"(seed {result.seed}, device counts {', '.join(map(str, counts))})")
        if result.problems:
            unsound += 1
            click.echo(f"{name} is not sound, {len(result.problems)} problem{'s' if len(result.problems) > 1 else ''}:")
            for problem in result.problems:
                click.echo(f"  - {problem}")
        else:
            click.echo(f"{name} is sound")
    click.echo(confinement.here_line())
    if unsound:
        sys.exit(EXIT_BELOW)


@click.command("check")
@click.argument("exercise_name", metavar="[EXERCISE]", required=False)
@click.option("--devices", "devices_text", help="check only these device counts, e.g. 1,2 (default: course.yaml)")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), help="inputs of the check (default: a new seed, printed)")
@click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
def check_command(exercise_name, devices_text, seed, course_path):
    """Check the course is sound: solutions full marks, stubs zero, every test file in a task,
    every task with tests. Exit code 1 if anything is not."""
    _check(exercise_name, devices_text, seed, course_path)
