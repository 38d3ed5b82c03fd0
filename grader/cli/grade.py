"""``grade EXERCISE``: grade one submission (by default the student's own exercises/ folder)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import replace

import click

from grader.course import BACKENDS
from grader.errors import EXIT_BELOW
from grader.grading.confinement import DEFAULT, HELP, LEVELS


def _reproduce_options(submission, backend, timeout, course_path) -> tuple[str, ...]:
    """The options given that change the result (beyond seed, tasks and devices, which the run knows)."""
    given = (("--submission", submission), ("--backend", backend), ("--timeout", timeout and f"{timeout:g}"),
             ("--course", course_path))
    return tuple(f"{flag} {shlex.quote(str(value))}" for flag, value in given if value)


def _local_limit_note(report, exercise) -> list[str]:
    """One sentence when a call timed out under the local limit and the autograder would allow longer."""
    timed_out = next((c.task for c in report.run.cases if c.kind == "timeout"), None)
    if timed_out is None:
        return []
    local, full = report.run.exercise.task(timed_out).timeout_s, exercise.task(timed_out).timeout_s
    if local >= full:
        return []
    return [f"calls are limited to {local:g} s when you grade your own exercises, so that a hang shows quickly; "
            f"the autograder allows {full:g} s. A correct solution takes well under a second: look for a loop "
            f"that never ends, or rerun with --timeout {full:g}"]


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        click.echo(text, nl=False)


def _grade(name, *, course=None, submission, tasks, devices, seed, fmt, output, fail_under, course_path, backend,
           timeout, allow_jax_mismatch, require_sandbox, show_output, watch):
    """``course``: the one the command line already read to check ``name``, else it is found here."""
    from grader.cli.options import find_exercise, parse_devices, parse_tasks
    from grader.course import find_course
    from grader.grading import zygote_first
    from grader.workers import compile_cache

    course = course or find_course(explicit=course_path)
    exercise = find_exercise(course, name, lambda owner, task: f"grade {owner} --task {task}").only(parse_tasks(tasks))
    graded = exercise if submission else exercise.local()  # a student's own run: the local time limits
    # ... and their own compile cache, which counts for nothing that is a grade (GitHub Classroom's report is one)
    own_cache = compile_cache.own_folder() if not submission and fmt != "classroom" else ""
    # the zygote starts importing JAX now, while the pipeline is imported (watch mode keeps its own)
    first = None if watch else zygote_first.start(course, graded, parse_devices(devices), backend, timeout, own_cache)
    try:
        began = time.monotonic()
        from grader.errors import Interrupted
        from grader.grading.pipeline import grade_submission
        from grader.grading.progress import RunProgress
        from grader.workers import timeline

        timeline.span("grader", "import the grading pipeline", began, time.monotonic())
        path = submission or os.path.join(course.root, exercise.stubs)
        options = _reproduce_options(submission, backend, timeout, course_path)

        def grade(workspace=first):
            progress = RunProgress(sys.stderr, f"grade {name}")
            try:
                report = grade_submission(course, graded, path, devices=parse_devices(devices), seed=seed,
                                          backend=backend, timeout_s=timeout, allow_jax_mismatch=allow_jax_mismatch,
                                          require_sandbox=require_sandbox, workspace=workspace, progress=progress)
            except Interrupted as stop:
                progress.clear()
                if fmt in ("text", "json") and not watch:  # the others would be read as a grade: write nothing
                    _write(replace(stop.partial, options=options).render(fmt), output)
                raise
            finally:
                progress.clear()
            return replace(report, options=options,
                           notes=report.notes + ([] if timeout else _local_limit_note(report, exercise)))

        if watch:
            return _watch(grade, course, exercise, path, fmt=fmt, output=output, fail_under=fail_under,
                          show_output=show_output, own_cache=own_cache)
        report = replace(grade(), show_output=show_output)
        drawing = time.monotonic()
        text = report.render(fmt)
        if fmt == "classroom":  # the result is base64 for the reporter: the log shows the report to read
            click.echo(report.render("text"), err=True, nl=False)
        if show_output and fmt not in ("text", "classroom"):  # the text report holds the output already
            from grader.grading.printed import printed

            click.echo(printed(report.run.student_output), err=True, nl=False)
        score = report.score
        _write(text, output)
        timeline.span("grader", "draw and write the report", drawing, time.monotonic())
        if output:
            share = f" ({score.percent:.0f}%)" if score.max_total else ""
            click.echo(f"{name}: {score.points_text()}{share}, seed {report.run.seed}; "
                       f"report written to {output}", err=True)
        if fail_under is not None and score.percent < fail_under:
            sys.exit(EXIT_BELOW)
    finally:
        if first is not None:
            first.close()


def _watch(grade, course, exercise, path, *, fmt, output, fail_under, show_output, own_cache):
    """--watch: regrade on every save until Ctrl-C (which run_safely turns into exit 130)."""
    from grader import submission as submissions
    from grader.errors import UsageError
    from grader.grading.watch import watch

    if fmt != "text" or output or fail_under is not None:
        raise UsageError("--watch draws the text report on the terminal; leave out --format, --output and --fail-under")
    watched = path if os.path.isfile(path) else submissions.find(path, exercise.name,
                                                                 os.path.join(course.root, exercise.stubs)).found
    watch(grade, lambda report: replace(report, show_output=show_output).render("text"), watched, own_cache=own_cache)


def exercise_command(name: str) -> click.Command:
    @click.command(name)
    @click.option("--submission", type=click.Path(), help="folder to grade: holds EXERCISE/ or the task modules")
    @click.option("--task", "tasks", multiple=True, help="grade only these tasks: --task dot,ring (or repeated)")
    @click.option("--devices", help="device counts to test, e.g. 1,2,4,8 (default: course.yaml); a task graded "
                                    "at fewer counts keeps to those of them listed; multi-process layouts run if "
                                    "their devices per process are listed")
    @click.option("--seed", type=click.IntRange(0, 2**31 - 1), envvar="GRADE_SEED",
                  help="reproduce a run (the seed is always printed); also read from GRADE_SEED")
    @click.option("--format", "fmt", type=click.Choice(["text", "json", "gradescope", "junit", "classroom"]),
                  default="text", show_default=True,
                  help="classroom: the result GitHub Classroom's grading reporter reads (the text report goes to stderr)")
    @click.option("--output", type=click.Path(), help="write the report here instead of stdout")
    @click.option("--fail-under", type=click.FloatRange(0, 100), help="exit 1 if the score is below PCT percent")
    @click.option("--backend", type=click.Choice(BACKENDS),
                  help="cpu: emulated devices; gpu/tpu: this machine's own (a case that needs more is not run "
                       "here); auto: an accelerator if JAX sees one, with emulated devices for the cases that need "
                       "more, else cpu (default: course.yaml)")
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
        from grader.cli.options import COURSE_KEY

        _grade(name, course=click.get_current_context().meta.get(COURSE_KEY), **kw)

    command.help = f"Grade {name}: run its hidden tests against your code and print a score table."
    return command
