"""``grade report``: a gradebook as one HTML page to look at (see grader/classroom/class_report.py)."""

from __future__ import annotations

import click


@click.command("report")
@click.argument("gradebook", type=click.Path())
@click.option("--html", "output", required=True, type=click.Path(), help="the HTML page to write")
def report_command(gradebook, output):
    """Write a class report: score distributions, the most common failures per task, who has no
    grade and why, and the backend and sandbox of every result."""
    from grader.classroom.class_report import render
    from grader.classroom.gradebook import Gradebook
    from grader.errors import UsageError

    with Gradebook(gradebook, readonly=True) as book:
        if book.meta_value("exercise") is None:
            raise UsageError(f"{gradebook} is an empty gradebook: nothing has been graded into it")
        page = render(book)
    with open(output, "w", encoding="utf-8") as f:
        f.write(page)
    click.echo(f"wrote {output}", err=True)
