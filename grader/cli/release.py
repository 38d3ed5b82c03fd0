"""``grade release EXERCISE --out DIR``: the student bundle and the Gradescope autograder."""

from __future__ import annotations

import click


def _names(by_task: dict[str, list[str]]) -> str:
    return "; ".join(f"{task}: {', '.join(names)}" for task, names in by_task.items() if names) or "none"


def _release(name, out, course_path):
    from grader.course import find_course
    from grader.authoring.release import AUTOGRADER, CLASSROOM_WORKFLOW, STUDENT, release
    from grader.layout import plural

    course = find_course(explicit=course_path)
    done = release(course, course.exercise(name), out)
    count = sum(map(len, done.public_tests.values()))
    hidden = sum(map(len, done.hidden_tests.values()))
    click.echo(f"{name} released to {out}")
    click.echo(f"  {STUDENT}/ and {STUDENT}.zip: stubs, grader, README and {plural(count, 'public test')} "
               f"({_names(done.public_tests)})")
    click.echo(f"    left out, run at submission: {plural(hidden, 'test')}, "
               f"{plural(sum(done.hidden_cases.values()), 'case')} ({_names(done.hidden_tests)})")
    click.echo(f"  {STUDENT}/{CLASSROOM_WORKFLOW}: GitHub Classroom autograding (push {STUDENT}/ as the "
               "assignment's template repository; points per task on every push, public tests)")
    click.echo(f"  {AUTOGRADER}.zip: Gradescope autograder (setup.sh, run_autograder), "
               f"all {plural(count + hidden, 'test')}")
    click.echo(f"  pinned: jax {done.pins['jax']}, jaxlib {done.pins['jaxlib']}, grader {done.grader_version}, "
               f"{len(done.pins)} packages in requirements.txt (Python {done.requires_python})")
    click.echo(f"  scanned {done.files_scanned} files: no solution code, no hidden test in the student bundle")
    for warning in done.warnings:
        click.echo(f"warning: {name}: {warning}", err=True)


@click.command("release")
@click.argument("exercise")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="folder to write the bundles into")
@click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
def release_command(exercise, out, course_path):
    """Write the student bundle (no solutions, no hidden tests; also a GitHub Classroom template repository)
    and the Gradescope autograder.zip."""
    _release(exercise, out, course_path)
