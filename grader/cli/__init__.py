"""``grade``: the command line. Subcommands load lazily so ``grade --help`` starts fast.

``grade EXERCISE`` grades an exercise named in course.yaml; the other subcommands are listed in
SUBCOMMANDS as "module:attribute" and imported only when used. Every command body runs inside
:func:`grader.errors.run_safely`, once, here: exit codes are 0 graded, 1 below --fail-under,
2 usage or course error, 3 the grader itself failed, 130 interrupted (Ctrl-C or SIGTERM: see
:mod:`grader.cli.interrupts`).
"""

from __future__ import annotations

import importlib

import click

from grader.errors import run_safely

SUBCOMMANDS = {
    "list": "grader.cli.list:list_command",
    "release": "grader.cli.release:release_command",
    "autograde": "grader.cli.autograde:autograde_command",
    "check": "grader.cli.check:check_command",
    "batch": "grader.cli.batch:batch_command",
    "merge": "grader.cli.merge:merge_command",
    "export": "grader.cli.export:export_command",
    "similar": "grader.cli.similar:similar_command",
    "report": "grader.cli.report:report_command",
}
_CLICK_OWN = (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort)


def _say(text: str) -> None:
    """An error's one line on stderr, with what a worker's output could put in it shown as escapes."""
    from grader.grading import sanitise

    click.echo(sanitise.terminal(text), err=True)


class GradeGroup(click.Group):
    """Fixed subcommands load on demand; any other name is an exercise to grade."""

    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def resolve_command(self, ctx, args):
        if args and args[0] not in SUBCOMMANDS and not args[0].startswith("-"):
            from grader.cli.options import COURSE_KEY, require_exercise

            ctx.meta[COURSE_KEY] = require_exercise(args[0], args[1:], SUBCOMMANDS)  # read once: _grade takes it
        return super().resolve_command(ctx, args)

    def get_command(self, ctx, name):
        if name in SUBCOMMANDS:
            module, _, attr = SUBCOMMANDS[name].partition(":")
            return getattr(importlib.import_module(module), attr)
        from grader.cli.grade import exercise_command

        return exercise_command(name)

    def invoke(self, ctx):
        from grader.cli.interrupts import stop_on_signals
        from grader.workers import timeline

        stop_on_signals()
        return run_safely(self._timed if timeline.enabled() else super().invoke, ctx, passthrough=_CLICK_OWN, say=_say)

    def _timed(self, ctx):
        """The command, its spans written to GRADE_TIMELINE when it ends (bench/timeline.py)."""
        import os
        import time

        from grader.workers import timeline

        timeline.span("grader", "start Python, import the command line", timeline.started(os.getpid()), time.monotonic())
        try:
            return super().invoke(ctx)
        finally:
            timeline.write()


@click.group(cls=GradeGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Grade an exercise: grade EXERCISE [--task ID] [--submission DIR]  (see grade EXERCISE --help)")
@click.version_option(package_name="pmap-course", prog_name="grade")
def main():
    """Grade multi-device JAX exercises; run it anywhere inside the course."""
