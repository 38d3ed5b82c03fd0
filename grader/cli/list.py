"""``grade list``: the exercises, their tasks and points, straight from course.yaml."""

from __future__ import annotations

import click


def _list(course_path):
    from grader.course import find_course

    course = find_course(explicit=course_path)
    for ex in course.exercises.values():
        click.echo(f"{ex.name}: {ex.title}  ({ex.max_points:g} points)")
        width = max(len(t.id) for t in ex.tasks)
        for t in ex.tasks:
            extra = "  extra credit" if t.extra_credit else ""
            where = f"processes {','.join(lay.spec for lay in t.processes)}" if t.processes else \
                f"devices {','.join(map(str, t.devices))}"
            click.echo(f"  {t.id:<{width}}  {t.points:>4g} pts  {where:<17}  {t.title}{extra}")


@click.command("list")
@click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
def list_command(course_path):
    """Exercises, tasks and points from course.yaml."""
    _list(course_path)
