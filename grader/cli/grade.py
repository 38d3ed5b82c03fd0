"""``grade EXERCISE``: grade one submission (by default the student's own exercises/ folder)."""

from __future__ import annotations

import os
import sys

import click

from grader.course import BACKENDS
from grader.errors import EXIT_BELOW
from grader.grading.confinement import DEFAULT, HELP, LEVELS


def _grade(name, *, submission, tasks, devices, seed, fmt, output, fail_under, course_path, backend, timeout,
           allow_jax_mismatch, require_sandbox, show_output, watch):
    from grader.cli.options import parse_devices
    from grader.course import find_course
    from grader.grading.pipeline import grade_submission

    course = find_course(explicit=course_path)
    exercise = course.exercise(name).only(tasks)
    path = submission or os.path.join(course.root, exercise.stubs)

    def grade(workspace=None):
        return grade_submission(course, exercise, path, devices=parse_devices(devices), seed=seed, backend=backend,
                                timeout_s=timeout, allow_jax_mismatch=allow_jax_mismatch,
                                require_sandbox=require_sandbox, workspace=workspace)

    if watch:
        return _watch(grade, course, exercise, path, fmt=fmt, output=output, fail_under=fail_under, show_output=show_output)
    report = grade()
    text = _report_text(report, fmt, show_output)
    if show_output and fmt != "text":
        from grader.grading.printed import printed

        click.echo(printed(report.run.student_output), err=True, nl=False)
    score = report.score
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        click.echo(f"{name}: {score.total:g} / {score.max_total:g} ({score.percent:.0f}%), seed {report.run.seed}; "
                   f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if fail_under is not None and score.percent < fail_under:
        sys.exit(EXIT_BELOW)


def _report_text(report, fmt: str, show_output: bool) -> str:
    """The report as ``fmt``; a text report ends with what the student's code printed when asked."""
    text = report.render(fmt)
    if show_output and fmt == "text":
        from grader.grading.printed import printed

        text += "\n" + printed(report.run.student_output)
    return text


def _watch(grade, course, exercise, path, *, fmt, output, fail_under, show_output):
    """--watch: regrade on every save until Ctrl-C (which run_safely turns into exit 130)."""
    from grader import submission as submissions
    from grader.errors import UsageError
    from grader.grading.watch import watch

    if fmt != "text" or output or fail_under is not None:
        raise UsageError("--watch draws the text report on the terminal; leave out --format, --output and --fail-under")
    watched = path if os.path.isfile(path) else submissions.find(path, exercise.name,
                                                                 os.path.join(course.root, exercise.stubs)).found
    watch(grade, lambda report: _report_text(report, "text", show_output), watched)


def exercise_command(name: str) -> click.Command:
    @click.command(name)
    @click.option("--submission", type=click.Path(), help="folder to grade: holds EXERCISE/ or the task modules")
    @click.option("--task", "tasks", multiple=True, help="grade only this task (repeatable)")
    @click.option("--devices", help="device counts to test, e.g. 1,2,4,8 (default: course.yaml); "
                                    "multi-process layouts run if their devices per process are listed")
    @click.option("--seed", type=click.IntRange(0, 2**31 - 1), envvar="GRADE_SEED",
                  help="reproduce a run (the seed is always printed); also read from GRADE_SEED")
    @click.option("--format", "fmt", type=click.Choice(["text", "json", "gradescope", "junit"]), default="text",
                  show_default=True)
    @click.option("--output", type=click.Path(), help="write the report here instead of stdout")
    @click.option("--fail-under", type=click.FloatRange(0, 100), help="exit 1 if the score is below PCT percent")
    @click.option("--backend", type=click.Choice(BACKENDS),
                  help="cpu: emulated devices; gpu/tpu: this machine's own; auto: an accelerator if JAX sees one, "
                       "else cpu (default: course.yaml)")
    @click.option("--timeout", type=click.FloatRange(min=0.1), help="per-call time limit in seconds (default: course.yaml)")
    @click.option("--show-output", is_flag=True,
                  help="print what your code printed, per device count (capped); with --format other than text, "
                       "to stderr")
    @click.option("--watch", is_flag=True, help="grade, then regrade each time you save a file; Ctrl-C stops")
    @click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
    @click.option("--allow-jax-mismatch", is_flag=True,
                  help="grade even if JAX is another series than the course was released for (0.x: another minor)")
    @click.option("--require-sandbox", type=click.Choice(LEVELS), default=DEFAULT["grade"], show_default=True,
                  help=HELP)
    def command(**kw):
        _grade(name, **kw)

    command.help = f"Grade {name}: run its hidden tests against your code and print a score table."
    return command
