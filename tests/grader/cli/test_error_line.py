"""The command line's one error line may quote a worker's output: it reaches the terminal with every
control character shown as an escape, never as a sequence the terminal would act on."""

import click
from click.testing import CliRunner

import grader.cli
from grader.errors import EXIT_INTERNAL, GraderError

FORGED = "worker output: \x1b[2J\x1b]0;pwned\x07dot 15 / 15 passed\r"


@click.command()
def failing():
    raise GraderError(FORGED)


def test_a_grader_error_quoting_hostile_output_is_escaped(monkeypatch):
    monkeypatch.setitem(grader.cli.SUBCOMMANDS, "failing", f"{__name__}:failing")
    result = CliRunner().invoke(grader.cli.main, ["failing"])
    assert result.exit_code == EXIT_INTERNAL
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr and "\r" not in result.stderr
    assert "grader error: worker output: \\x1b[2J\\x1b]0;pwned\\x07dot 15 / 15 passed\\x0d" in result.stderr
