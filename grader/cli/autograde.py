"""``grade autograde EXERCISE``: what Gradescope's run_autograder and PrairieLearn's entrypoint run.

Grades the submission with the full suites of the course in the current folder and writes the
platform's results.json: Gradescope (``--root /autograder``: reads ``ROOT/submission``, see
:mod:`grader.grading.gradescope`) or PrairieLearn (``--platform prairielearn``, ``--root /grade``:
reads ``ROOT/student``, see :mod:`grader.grading.prairielearn`); both write
``ROOT/results/results.json``. Whatever happens, a results.json is written: a submission that cannot
be graded gets a sentence saying why (zero points on Gradescope, "not gradable" on PrairieLearn),
instead of the platform's bare "autograder failed". The text report goes to stdout, which both
platforms show to instructors.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from typing import Callable

import click

from grader.grading import confinement

GRADER_FAILED = ("The autograder itself failed on this submission (not a problem with your code as far as "
                 "it can tell); your instructors can see the details.")


@dataclass(frozen=True)
class Platform:
    """Where a platform puts the submission under its root, and how its results.json is made."""

    root: str
    submission: str
    results: Callable[[dict], dict]
    failure: Callable[[str], dict]
    write: Callable[[str, dict], None]


def platforms() -> dict[str, Platform]:
    from grader.grading import gradescope, prairielearn

    return {"gradescope": Platform("/autograder", "submission", gradescope.results, gradescope.failure_results,
                                   gradescope.write),
            "prairielearn": Platform("/grade", "student", prairielearn.results, prairielearn.failure_results,
                                     prairielearn.write)}


def autograde(name: str, root: str, platform: Platform, allow_jax_mismatch: bool = False,
              require_sandbox: str = "none") -> dict:
    """Grade the submission under ROOT and return the platform's results (raises the engine's errors)."""
    from grader.course import find_course
    from grader.grading.pipeline import grade_submission

    course = find_course()
    report = grade_submission(course, course.exercise(name), os.path.join(root, platform.submission),
                              allow_jax_mismatch=allow_jax_mismatch, require_sandbox=require_sandbox)
    click.echo(report.to_text(), nl=False)
    return platform.results(report.to_dict())


@click.command("autograde")
@click.argument("exercise")
@click.option("--platform", "platform_name", type=click.Choice(["gradescope", "prairielearn"]), default="gradescope",
              show_default=True, help="whose layout and results.json")
@click.option("--root", type=click.Path(file_okay=False),
              help="the platform's folder [default: /autograder for gradescope, /grade for prairielearn]")
@click.option("--allow-jax-mismatch", is_flag=True, help="grade even if JAX is not the series the course was released for")
@click.option("--require-sandbox", type=click.Choice(confinement.LEVELS),
              default=confinement.DEFAULT["autograde"], show_default=True, help=confinement.HELP)
def autograde_command(exercise, platform_name, root, allow_jax_mismatch, require_sandbox):
    """Grade a Gradescope or PrairieLearn submission with the full suites (run_autograder and the
    PrairieLearn entrypoint call this).

    Exit code 2, after writing results.json, when --require-sandbox refuses this machine.
    """
    from grader.errors import EXIT_USAGE, UsageError
    from grader.grading import sanitise

    platform = platforms()[platform_name]
    root = root or platform.root
    refused = False
    try:
        results = autograde(exercise, root, platform, allow_jax_mismatch, require_sandbox)
    except confinement.SandboxRefused as exc:
        click.echo(sanitise.terminal(f"error: {exc}"))
        results, refused = platform.failure(GRADER_FAILED), True
    except UsageError as exc:
        click.echo(sanitise.terminal(f"error: {exc}"))
        results = platform.failure(f"This submission could not be graded: {exc}")
    except Exception:  # noqa: BLE001 - the platform must get a results.json whatever went wrong
        click.echo(sanitise.terminal(traceback.format_exc()))  # a grader error may quote a worker's output
        results = platform.failure(GRADER_FAILED)
    path = os.path.join(root, "results", "results.json")
    platform.write(path, results)
    click.echo(f"wrote {path}: " + (f"score {results['score']:g}" if "score" in results else "not gradable"))
    if refused:
        sys.exit(EXIT_USAGE)
