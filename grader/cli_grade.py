"""``grade EXERCISE``: grade one submission (by default the student's own exercises/ folder)."""

from __future__ import annotations

import sys

import click

from grader.cli import EXIT_BELOW, run_safely
from grader.course import BACKENDS
from grader.grading.confinement import DEFAULT, HELP, LEVELS

PUBLIC_ONLY_NOTE = ("public tests only: the full suite, with any hidden tests, runs when you submit, "
                    "so your final score may differ")


def parse_devices(text: str | None) -> tuple[int, ...] | None:
    from grader.verdicts import UsageError

    if not text:
        return None
    try:
        counts = tuple(sorted({int(p) for p in text.split(",") if p.strip()}))
    except ValueError:
        raise UsageError(f"--devices takes device counts like 1,2,4,8, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise UsageError(f"--devices takes positive device counts like 1,2,4,8, got {text!r}")
    return counts


def _render(fmt, run, result, course_name, notes) -> str:
    """The report in ``fmt``: text for people, json (our schema), gradescope (results.json), junit."""
    import json

    from grader import exports, gradescope, report

    if fmt == "text":
        return report.to_text(run, result, course_name, notes)
    if fmt == "json":
        return report.to_json(run, result, course_name, notes)
    data = report.to_dict(run, result, course_name, notes)
    if fmt == "gradescope":
        return json.dumps(gradescope.results(data), indent=2) + "\n"
    return exports.junit_xml([(data["exercise"], data, "")], f"{course_name} {data['exercise']}")


def _grade(name, *, submission, tasks, devices, seed, fmt, output, fail_under, course_path, backend, timeout,
           allow_jax_mismatch, require_sandbox):
    import os

    from grader import pins, runner
    from grader.course import find_course

    course = find_course(explicit=course_path)
    exercise = course.exercise(name)
    notes = pins.check_jax(course, allow_jax_mismatch)
    if course.release and course.release.public_only:
        notes.append(PUBLIC_ONLY_NOTE)
    submission = submission or os.path.join(course.root, exercise.stubs)
    run = runner.grade(course, exercise, submission, task_ids=tasks or None, devices=parse_devices(devices),
                       seed=seed, backend=backend or course.backend, timeout_s=timeout, require_sandbox=require_sandbox)
    from grader import scoring

    result = scoring.score(exercise, run.cases, run.tasks)
    text = _render(fmt, run, result, course.name, notes)
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
        click.echo(f"{name}: {result.total:g} / {result.max_total:g} ({result.percent:.0f}%), seed {run.seed}; "
                   f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if fail_under is not None and result.percent < fail_under:
        sys.exit(EXIT_BELOW)


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
    @click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
    @click.option("--allow-jax-mismatch", is_flag=True,
                  help="grade even if JAX is another series than the course was released for (0.x: another minor)")
    @click.option("--require-sandbox", type=click.Choice(list(LEVELS)), default=DEFAULT["grade"], show_default=True,
                  help=HELP)
    def command(**kw):
        run_safely(_grade, name, **kw)

    command.help = f"Grade {name}: run its hidden tests against your code and print a score table."
    return command
