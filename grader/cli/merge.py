"""``grade merge``: join the gradebooks of CI shards into one."""

from __future__ import annotations

import click


@click.command("merge")
@click.argument("gradebooks", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(), help="the merged gradebook to write (new file)")
def merge_command(gradebooks, output):
    """Join shard gradebooks into one; refuses gradebooks of different courses or seeds."""
    from grader.classroom.gradebook import merge
    from grader.grading.sanitise import line

    for note in merge(list(gradebooks), output):
        click.echo(line(note), err=True)  # notes name students: folder names
