"""``grade autograde EXERCISE --root /autograder``: what Gradescope's run_autograder runs.

Grades ``ROOT/submission`` with the full suites of the course in the current folder and writes
``ROOT/results/results.json`` (:mod:`grader.grading.gradescope`). Whatever happens, a results.json is
written: a submission that cannot be graded gets zero points and a sentence saying why, instead of
Gradescope's bare "autograder failed". The text report goes to stdout, which Gradescope shows to
instructors only.
"""

from __future__ import annotations

import os
import sys
import traceback

import click

from grader.grading import confinement

GRADER_FAILED = ("The autograder itself failed on this submission (not a problem with your code as far as "
                 "it can tell); your instructors can see the details.")


def autograde(name: str, root: str, allow_jax_mismatch: bool = False, require_sandbox: str = "none") -> dict:
    """Grade ROOT/submission and return Gradescope's results (raises the engine's errors)."""
    from grader.course import find_course
    from grader.grading import gradescope
    from grader.grading.pipeline import grade_submission

    course = find_course()
    report = grade_submission(course, course.exercise(name), os.path.join(root, "submission"),
                              allow_jax_mismatch=allow_jax_mismatch, require_sandbox=require_sandbox)
    click.echo(report.to_text(), nl=False)
    return gradescope.results(report.to_dict())


@click.command("autograde")
@click.argument("exercise")
@click.option("--root", default="/autograder", show_default=True, type=click.Path(file_okay=False),
              help="Gradescope's folder: reads ROOT/submission, writes ROOT/results/results.json")
@click.option("--allow-jax-mismatch", is_flag=True, help="grade even if JAX is not the series the course was released for")
@click.option("--require-sandbox", type=click.Choice(confinement.LEVELS),
              default=confinement.DEFAULT["autograde"], show_default=True, help=confinement.HELP)
def autograde_command(exercise, root, allow_jax_mismatch, require_sandbox):
    """Grade a Gradescope submission with the full suites (run_autograder calls this).

    Exit code 2, after writing results.json, when --require-sandbox refuses this machine.
    """
    from grader.errors import EXIT_USAGE, UsageError
    from grader.grading import gradescope, sanitise

    refused = False
    try:
        results = autograde(exercise, root, allow_jax_mismatch, require_sandbox)
    except confinement.SandboxRefused as exc:
        click.echo(sanitise.terminal(f"error: {exc}"))
        results, refused = gradescope.failure_results(GRADER_FAILED), True
    except UsageError as exc:
        click.echo(sanitise.terminal(f"error: {exc}"))
        results = gradescope.failure_results(f"This submission could not be graded: {exc}")
    except Exception:  # noqa: BLE001 - Gradescope must get a results.json whatever went wrong
        click.echo(sanitise.terminal(traceback.format_exc()))  # a grader error may quote a worker's output
        results = gradescope.failure_results(GRADER_FAILED)
    gradescope.write(os.path.join(root, "results", "results.json"), results)
    click.echo(f"wrote {os.path.join(root, 'results', 'results.json')}: {results['score']:g} points")
    if refused:
        sys.exit(EXIT_USAGE)
