"""``grade``: the command line. Subcommands load lazily so ``grade --help`` starts fast.

``grade EXERCISE`` grades an exercise named in course.yaml; the other subcommands are listed in
SUBCOMMANDS as "module:attribute" and imported only when used. Exit codes: 0 graded, 1 below
--fail-under, 2 usage or course error, 3 the grader itself failed.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

SUBCOMMANDS = {
    "list": "grader.cli_list:list_command",
    "release": "grader.cli_release:release_command",
    "autograde": "grader.cli_autograde:autograde_command",
    "check": "grader.cli_check:check_command",
    "batch": "grader.cli_batch:batch_command",
    "merge": "grader.cli_gradebook:merge_command",
    "export": "grader.cli_gradebook:export_command",
}

EXIT_BELOW, EXIT_USAGE, EXIT_INTERNAL = 1, 2, 3


def run_safely(fn, *args, **kwargs):
    """Call a command body, turning the engine's errors into a message and an exit code."""
    from grader.verdicts import GraderError, UsageError

    try:
        return fn(*args, **kwargs)
    except UsageError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    except GraderError as exc:
        click.echo(f"grader error: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if os.environ.get("GRADE_DEBUG"):
            raise
        click.echo(f"grader error: internal failure ({type(exc).__name__}: {exc}); "
                   "rerun with GRADE_DEBUG=1 for the traceback", err=True)
        sys.exit(EXIT_INTERNAL)


class GradeGroup(click.Group):
    """Fixed subcommands load on demand; any other name is an exercise to grade."""

    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        if name in SUBCOMMANDS:
            module, _, attr = SUBCOMMANDS[name].partition(":")
            return getattr(importlib.import_module(module), attr)
        from grader.cli_grade import exercise_command

        return exercise_command(name)


@click.group(cls=GradeGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Grade an exercise: grade EXERCISE [--task ID] [--submission DIR]  (see grade EXERCISE --help)")
@click.version_option(package_name="pmap-course", prog_name="grade")
def main():
    """Grade multi-device JAX exercises; run it anywhere inside the course."""
