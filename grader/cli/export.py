"""``grade export``: a gradebook as CSV, Gradescope results.json files, JUnit XML or JSON."""

from __future__ import annotations

import os

import click


def _write_gradescope(book, folder: str) -> int:
    """``folder/<student>/results.json`` for every student; returns how many were not graded. The top-level
    score is the gradebook's (after any late penalty: the report's ``late`` record), which Gradescope takes
    over the tests' sum."""
    from grader.classroom.gradebook import GRADED
    from grader.errors import UsageError
    from grader.grading import gradescope

    not_graded = 0
    for r in book.results():
        if os.sep in r.student or r.student in (".", ".."):
            raise UsageError(f"student id {r.student!r} cannot name a folder")
        data = (gradescope.results(r.report) if r.status == GRADED
                else gradescope.failure_results(f"This submission could not be graded: {r.error}"))
        not_graded += r.status != GRADED
        gradescope.write(os.path.join(folder, r.student, "results.json"), data)
    return not_graded


def _lms(book, fmt, roster_path, assignment, above_max) -> str:
    """The Canvas or Moodle CSV; its warnings (who is missing, who is not on the roster, marks above the
    maximum) go to stderr."""
    from grader.classroom import classlist, lms
    from grader.errors import UsageError

    if not roster_path:
        raise UsageError(f"--format {fmt} needs --roster CSV: the LMS knows students by the ids the roster gives")
    roster = classlist.load(roster_path)
    if fmt == "canvas":
        text, warnings = lms.canvas_csv(book, roster, assignment or lms.canvas_assignment(roster))
    else:
        text, warnings = lms.moodle_csv(book, roster, assignment or book.meta_value("exercise"), above_max)
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)  # already terminal text (grader.classroom.lms)
    return text


def _export(gradebook, fmt, output, roster_path, assignment, above_max):
    from grader.classroom import exports
    from grader.classroom.gradebook import FAILED, Gradebook
    from grader.errors import UsageError
    from grader.layout import plural

    with Gradebook(gradebook, readonly=True) as book:
        if book.meta_value("exercise") is None:
            raise UsageError(f"{gradebook} is an empty gradebook: nothing has been graded into it")
        failed = sum(r.status == FAILED for r in book.results())
        if fmt == "gradescope":
            if not output:
                raise UsageError("--format gradescope writes one results.json per student: give a folder with -o")
            not_graded = _write_gradescope(book, output)
            click.echo(f"wrote {output}/<student>/results.json for {plural(len(book.results()), 'student')} "
                       f"({not_graded} not graded: score 0)", err=True)
        else:
            render = {"csv": exports.gradebook_csv, "json": exports.gradebook_json, "junit": exports.gradebook_junit}
            text = _lms(book, fmt, roster_path, assignment, above_max) if fmt in ("canvas", "moodle") else render[fmt](book)
            if output:
                with open(output, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
            else:
                click.echo(text, nl=False)
    if failed:
        click.echo(f"warning: the grader failed on {plural(failed, 'submission')}; run grade batch again before "
                   "uploading",
                   err=True)


@click.command("export")
@click.argument("gradebook", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["csv", "gradescope", "junit", "json", "canvas", "moodle"]),
              default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(), help="file to write (a folder for gradescope); default stdout")
@click.option("--roster", "roster_path", type=click.Path(),
              help="the class list CSV (canvas, moodle; see docs/instructor.md)")
@click.option("--assignment", help="the LMS assignment column [canvas default: the assignment column of Canvas's "
              "gradebook export given as --roster; moodle default: the exercise name]")
@click.option("--above-max", type=click.Choice(["cap", "column", "keep"]), default="cap", show_default=True,
              help="moodle: a mark above the maximum is capped at it, or its excess goes in a column of its own, "
                   "or it is kept (a site with Unlimited grades on)")
def export_command(gradebook, fmt, output, roster_path, assignment, above_max):
    """Write a gradebook as CSV (a row per student, a column per task), Gradescope results.json
    files, JUnit XML, JSON, or a Canvas / Moodle grade import CSV (with --roster)."""
    _export(gradebook, fmt, output, roster_path, assignment, above_max)
