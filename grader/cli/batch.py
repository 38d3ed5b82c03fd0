"""``grade batch``: grade a whole class into a gradebook (see grader/batch.py for how)."""

from __future__ import annotations

import os
import sys

import click

from grader.course import BACKENDS
from grader.errors import EXIT_INTERNAL, EXIT_INTERRUPTED
from grader.grading import confinement, sanitise


def default_jobs() -> int:
    """One job per core this process may use: each job mostly keeps one core busy."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _choose_seed(book, seed: int | None, regrade: bool) -> int:
    """The gradebook's seed, so a class is graded on one set of inputs; a new one for a new gradebook."""
    from grader.errors import UsageError
    from grader.grading.runner import new_seed

    previous = book.meta_value("seed")
    if seed is None:
        return new_seed() if previous is None else previous
    if previous is not None and seed != previous and not regrade:
        raise UsageError(f"{book.path} was graded with seed {previous}; a class is graded with one seed, so run "
                         f"with --seed {previous}, or add --regrade to grade everyone again with seed {seed}")
    return seed


def _bind(book, course, exercise, course_hash: str, seed: int, devices) -> None:
    """Check the gradebook is for this exercise, then stamp it with what this batch grades with."""
    from grader import __version__
    from grader.errors import UsageError
    from grader.submission import stub_sources

    for key, value in (("course", course.name), ("exercise", exercise.name)):
        if book.meta_value(key) not in (None, value):
            raise UsageError(f"{book.path} holds grades of {key} {book.meta_value(key)!r}, not {value!r}; "
                             "use another --gradebook")
    tasks = [{"id": t.id, "title": t.title, "points": t.points, "extra_credit": t.extra_credit} for t in exercise.tasks]
    book.set_meta(course=course.name, exercise=exercise.name, course_hash=course_hash, seed=seed, tasks=tasks,
                  max_score=exercise.max_points, grader_version=__version__, devices=list(devices or ()),
                  stubs=stub_sources(os.path.join(course.root, exercise.stubs)))  # grade similar needs no course


ALL_TASKS = "all"


def _regrade_tasks(regrade: str | None, exercise) -> bool | set[str]:
    """--regrade -> True (everyone, in full); --regrade dot,ring -> those tasks for everyone."""
    from grader.errors import UsageError

    if regrade is None or regrade == ALL_TASKS:
        return regrade == ALL_TASKS
    tasks = {t.strip() for t in regrade.split(",") if t.strip()}
    unknown = sorted(tasks - exercise.task_ids)
    if unknown:
        raise UsageError(f"--regrade {regrade}: no task {', '.join(unknown)} among the graded tasks "
                         f"({', '.join(t.id for t in exercise.tasks)}); --regrade alone grades everything again")
    return tasks


def _batch(submissions, exercise_name, tasks, jobs, shard_text, gradebook_path, seed, regrade, devices_text,
           course_path, timeout_s, backend, roster_path, times_path, require_sandbox):
    from grader.classroom import batch, classlist, fingerprint, roster, scratch
    from grader.classroom.deadlines import for_batch, reprice
    from grader.classroom.regrade import describe
    from grader.classroom.gradebook import FAILED, Gradebook
    from grader.classroom.lock import gradebook_in_use
    from grader.classroom.progress import Progress
    from grader.classroom.summary import summarize
    from grader.cli.options import find_exercise, parse_devices, parse_tasks
    from grader.course import find_course
    from grader.layout import plural
    from grader.workers.backends import resolve

    confinement.require_here(require_sandbox)  # once here, not once per student
    course = find_course(explicit=course_path)
    exercise = find_exercise(course, exercise_name,
                             lambda owner, task: f"grade batch ... --exercise {owner} --task {task}")
    exercise = exercise.only(parse_tasks(tasks))
    devices = parse_devices(devices_text)
    shard = roster.parse_shard(shard_text)
    class_list = classlist.load(roster_path) if roster_path else None
    found = roster.discover(list(submissions), exercise.name, class_list)
    everyone = found.entries
    entries = [e for e in everyone if roster.in_shard(e.student, shard)]
    deadlines = for_batch(course, exercise, {e.student for e in everyone}, class_list, times_path)
    if found.left_out:
        click.echo(f"left out {plural(len(found.left_out), 'file')} that {'is' if len(found.left_out) == 1 else 'are'} "
                   f"no submission (a folder, .zip, .tar.gz or .ipynb is): {', '.join(map(sanitise.line, found.left_out))}",
                   err=True)
    late = [e.student for e in entries if e.late]
    if late and deadlines and not times_path:
        click.echo(f"the LMS marked {plural(len(late), 'submission')} late; the late policy reads submission "
                   "times, which a download's file times may not be: give the true times with --submitted-at",
                   err=True)
    gradebook_path = gradebook_path or f"{exercise.name}.sqlite"
    backend = resolve(backend or course.backend).name  # a backend this machine lacks stops here, not per student
    fingerprints = fingerprint.task_fingerprints(course, exercise, devices, backend)
    course_hash = fingerprint.course_hash(fingerprints)
    again = _regrade_tasks(regrade, exercise)
    with gradebook_in_use(gradebook_path), Gradebook(gradebook_path) as book:
        if stale := scratch.remove_stale():
            click.echo(f"removed the scratch of {plural(stale, 'batch', 'batches')} that did not end cleanly", err=True)
        seed = _choose_seed(book, seed, again is True)
        _bind(book, course, exercise, course_hash, seed, devices)
        todo, kept = batch.plan(entries, book, course_hash, again, fingerprints)
        repriced = reprice(book, [e for e in entries if e.student in set(kept)], deadlines)
        where = f" (shard {shard[0]}/{shard[1]})" if shard else ""
        again = " (--regrade grades them again)" if kept else ""
        click.echo(f"{exercise.name}: {plural(len(entries), 'submission')}{where}; grading {len(todo)}, {len(kept)} "
                   f"already graded{again} · seed {seed} · {plural(jobs, 'job')} · gradebook {gradebook_path}",
                   err=True)
        if repriced:
            click.echo(f"{repriced} kept results had a new deadline or submission time: late penalty updated", err=True)
        settings = batch.Settings(course, exercise, seed, devices, course_hash, jobs, timeout_s, backend, deadlines,
                                  fingerprints, require_sandbox=require_sandbox)
        progress = Progress(len(todo))
        try:
            batch.Batch(settings, book, progress).run(todo)
        except KeyboardInterrupt:
            click.echo(f"\ninterrupted: {progress.done} of {len(todo)} finished and saved in {gradebook_path}; "
                       "run the same command again to grade the rest", err=True)
            sys.exit(EXIT_INTERRUPTED)
        results = [book.get(e.student) for e in entries]
    click.echo(summarize(results, book.meta_value("tasks"), f"{exercise.name}{where}"), nl=False)
    partial = [p.tasks for p in todo if p.tasks]
    click.echo(f"  {describe(partial, len(kept), len(todo) - len(partial))}")
    if any(r.status == FAILED for r in results):
        sys.exit(EXIT_INTERNAL)


@click.command("batch")
@click.argument("submissions", nargs=-1, required=True, type=click.Path())
@click.option("--exercise", "exercise_name", required=True, help="the exercise to grade, as named in course.yaml")
@click.option("--task", "tasks", multiple=True, help="grade only these tasks: --task dot,ring (default: every task)")
@click.option("--jobs", type=click.IntRange(1), default=default_jobs, show_default="the usable cores",
              help="submissions graded at once")
@click.option("--shard", "shard_text", metavar="K/N|auto",
              help="grade only shard K of N (the same split on every machine); auto: from a Slurm array job, "
                   "auto:INDEX_VAR/COUNT_VAR: from the variables named")
@click.option("--gradebook", "gradebook_path", type=click.Path(), help="SQLite gradebook [default: EXERCISE.sqlite]")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), help="inputs for the whole class (default: the gradebook's)")
@click.option("--regrade", is_flag=False, flag_value=ALL_TASKS, metavar="[TASK,...]",
              help="grade again even where the gradebook's result still stands: everything, or only these tasks")
@click.option("--devices", "devices_text", help="device counts to test, e.g. 1,2,4,8 (default: course.yaml)")
@click.option("--backend", type=click.Choice(BACKENDS), help="where workers run (default: course.yaml); see grade EXERCISE --help")
@click.option("--course", "course_path", type=click.Path(), help="course.yaml or the folder holding it")
@click.option("--submission-timeout", "timeout_s", type=click.FloatRange(1), default=1200.0, show_default=True,
              help="seconds one submission may take before its grading is stopped")
@click.option("--roster", "roster_path", type=click.Path(),
              help="class list CSV; its due:EXERCISE column gives extensions")
@click.option("--submitted-at", "times_path", type=click.Path(),
              help="CSV student,submitted_at: submission times that override the files' timestamps")
@click.option("--require-sandbox", type=click.Choice(confinement.LEVELS), default=confinement.DEFAULT["batch"],
              show_default=True, help=confinement.HELP)
def batch_command(**kw):
    """Grade SUBMISSIONS (folders, .zip / .tar.gz, or folders of them) into a gradebook.

    Each submission is graded in a process of its own and saved the moment it finishes; run the
    same command again after an interruption to grade the rest. Exit code 3 if the grader could not
    grade some submission (they are listed; a rerun retries them).
    """
    _batch(**kw)
