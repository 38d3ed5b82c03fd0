"""``grade similar``: flag pairs of submissions whose code is unusually alike (never changes a grade)."""

from __future__ import annotations

import contextlib
import os
import tempfile

import click


def _entries(source: str, exercise_name: str | None):
    """(exercise name, roster entries, the stubs' sources if a gradebook keeps them) from a gradebook's
    sources or a class folder."""
    from grader.classroom import roster
    from grader.classroom.gradebook import REFUSED, Gradebook
    from grader.errors import UsageError

    if os.path.isfile(source):
        with Gradebook(source, readonly=True) as book:
            name = book.meta_value("exercise")
            if name is None:
                raise UsageError(f"{source} is an empty gradebook: nothing has been graded into it")
            if exercise_name not in (None, name):
                raise UsageError(f"{source} holds grades of exercise {name!r}, not {exercise_name!r}")
            results = [r for r in book.results() if r.status != REFUSED]
            stubs = book.meta_value("stubs")
        return name, [roster.entry_of(r.student, tuple(r.source.split(", "))) for r in results], stubs
    if not exercise_name:
        raise UsageError("comparing a class folder needs --exercise (a gradebook names its own)")
    return exercise_name, roster.discover([source], exercise_name).entries, None


@contextlib.contextmanager
def _stubs_folder(kept: dict[str, str] | None, name: str, course_path: str | None):
    """The stubs to discount: those a gradebook keeps (so it needs no course at hand), else the course's."""
    from grader.course import find_course

    if kept and not course_path:
        with tempfile.TemporaryDirectory(prefix="grade-similar-stubs-") as folder:
            for module, text in kept.items():
                with open(os.path.join(folder, module + ".py"), "w", encoding="utf-8") as f:
                    f.write(text)
            yield folder
        return
    course = find_course(explicit=course_path)
    yield os.path.join(course.root, course.exercise(name).stubs)


@click.command("similar")
@click.argument("source", metavar="GRADEBOOK_OR_FOLDER", type=click.Path(exists=True))
@click.option("--exercise", "exercise_name", help="the exercise (needed for a class folder)")
@click.option("--course", "course_path", type=click.Path(),
              help="course.yaml or the folder holding it (a gradebook keeps the stubs, so it needs none)")
@click.option("--threshold", type=click.FloatRange(0, 1), default=0.6, show_default=True,
              help="flag a pair when this share of one's module is found in the other's")
@click.option("--html", type=click.Path(), help="write copydetect's side-by-side report here")
def similar_command(source, exercise_name, course_path, threshold, html):
    """Flag pairs of submissions whose code is unusually alike, after removing the code the stubs give.

    Reads the submissions a gradebook graded, or a class folder. It only flags: a flagged pair is
    for a person to read side by side (--html); no grade changes.
    """
    from grader.classroom.similarity import compare
    from grader.layout import plural
    from grader.grading.sanitise import line

    name, entries, kept = _entries(source, exercise_name)
    with _stubs_folder(kept, name, course_path) as stubs:
        pairs, skipped = compare(entries, name, stubs, threshold, html)
    compared = plural(len(entries) - len(skipped), "submission")
    click.echo(f"{name}: {compared} compared, {plural(len(pairs), 'pair')} more than "
               f"{threshold:.0%} alike (after removing the stubs' code)")
    for p in pairs:  # student ids are folder names
        click.echo(f"  {line(p.first)}  {line(p.second)}  {line(p.module)}.py  {p.first_share:.0%} / {p.second_share:.0%}")
    for student, why in sorted(skipped.items()):
        click.echo(f"  not compared: {line(student)}: {line(why)}", err=True)
    if html:
        click.echo(f"side-by-side report: {html}", err=True)
