"""``grade release EXERCISE --out DIR``: the student bundle, the Gradescope autograder and the
PrairieLearn question. It says what went where in counts and paths; the tests themselves are listed in
each bundle (course.yaml), not here."""

from __future__ import annotations

import os

import click


def _release(name, out, course_path):
    from grader.course import find_course
    from grader.authoring.release import AUTOGRADER, CLASSROOM_WORKFLOW, PRAIRIELEARN, STUDENT, release
    from grader.layout import plural

    course = find_course(explicit=course_path)
    done = release(course, course.exercise(name), out)
    count = sum(map(len, done.public_tests.values()))
    hidden = sum(map(len, done.hidden_tests.values()))

    def where(*parts: str) -> str:  # a path under --out, as the user gave it
        return os.path.join(out, *parts)

    click.echo(f"{name} released to {out}:")
    click.echo(f"  {where(STUDENT)}/ and {where(STUDENT)}.zip: stubs, grader, README and "
               f"{plural(count, 'public test')}; {plural(hidden, 'test')} ({plural(sum(done.hidden_cases.values()), 'case')}) "
               "left out, run at submission")
    click.echo(f"  {where(STUDENT, CLASSROOM_WORKFLOW)}: GitHub Classroom autograding (push {STUDENT}/ as the "
               "assignment's template repository)")
    click.echo(f"  {where(AUTOGRADER)}.zip: Gradescope autograder, all {plural(count + hidden, 'test')}, and "
               f"{plural(done.figures, 'figure')} of the reference's programs to compare students' with"
               f"{' (every one: grade check passed)' if done.figures_checked else ''}")
    click.echo(f"  {where(PRAIRIELEARN)}/: PrairieLearn question, grader files and Dockerfile, all "
               f"{plural(count + hidden, 'test')}")
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
    """Write the student bundle (no solutions, no hidden tests; also a GitHub Classroom template repository),
    the Gradescope autograder.zip and the PrairieLearn question."""
    _release(exercise, out, course_path)
