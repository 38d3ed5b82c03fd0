"""``grade export``: a gradebook as CSV, Gradescope results.json files, JUnit XML or JSON."""

from __future__ import annotations

import os

import click

def _write_gradescope(book, folder: str) -> int:
    """``folder/<student>/results.json`` for every student; returns how many were not graded."""
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


def _export(gradebook, fmt, output):
    from grader.classroom import exports
    from grader.classroom.gradebook import FAILED, Gradebook
    from grader.errors import UsageError

    with Gradebook(gradebook, readonly=True) as book:
        if book.meta_value("exercise") is None:
            raise UsageError(f"{gradebook} is an empty gradebook: nothing has been graded into it")
        failed = sum(r.status == FAILED for r in book.results())
        if fmt == "gradescope":
            if not output:
                raise UsageError("--format gradescope writes one results.json per student: give a folder with -o")
            not_graded = _write_gradescope(book, output)
            click.echo(f"wrote {output}/<student>/results.json for {len(book.results())} students "
                       f"({not_graded} not graded: score 0)", err=True)
        else:
            render = {"csv": exports.gradebook_csv, "json": exports.gradebook_json, "junit": exports.gradebook_junit}
            text = render[fmt](book)
            if output:
                with open(output, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
            else:
                click.echo(text, nl=False)
    if failed:
        click.echo(f"warning: the grader failed on {failed} submissions; run grade batch again before uploading",
                   err=True)


@click.command("export")
@click.argument("gradebook", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["csv", "gradescope", "junit", "json"]), default="csv",
              show_default=True)
@click.option("-o", "--output", type=click.Path(), help="file to write (a folder for gradescope); default stdout")
def export_command(gradebook, fmt, output):
    """Write a gradebook as CSV (a row per student, a column per task), Gradescope results.json
    files, JUnit XML or JSON."""
    _export(gradebook, fmt, output)
