"""``grade report``: a gradebook as one HTML page to look at (see grader/classroom/class_report.py)."""

from __future__ import annotations

import click


@click.command("report")
@click.argument("gradebook", type=click.Path())
@click.option("--html", "output", required=True, type=click.Path(), help="the HTML page to write")
@click.option("--roster", "roster_path", type=click.Path(),
              help="the class list CSV: the page also lists who on it sent nothing (see docs/instructor.md)")
def report_command(gradebook, output, roster_path):
    """Write a class report: score distributions, the most common failures per task, who has no
    grade and why, who on the roster sent nothing, and the backend and sandbox of every result."""
    from grader.classroom import classlist
    from grader.classroom.class_report import render
    from grader.classroom.gradebook import Gradebook
    from grader.errors import UsageError

    roster = classlist.load(roster_path) if roster_path else None
    with Gradebook(gradebook, readonly=True) as book:
        if book.meta_value("exercise") is None:
            raise UsageError(f"{gradebook} is an empty gradebook: nothing has been graded into it")
        page = render(book, roster)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    click.echo(f"wrote {output}", err=True)
