"""One grading run: a submission, an exercise (cut to the graded tasks), a seed -> cases.

Copies the submission to scratch, runs the exercise's hidden suite with pytest *in this process*
(with :mod:`grader.grading.plugin`), and lets the plugin send every student call to workers. The
scratch folder and all workers are gone when the run returns, whatever happened.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader import processes
from grader.course import Course, Exercise
from grader.errors import GraderError, Interrupted, UsageError
from grader.grading import confinement, integrity
from grader.grading.progress import RunProgress
from grader.grading.workspace import ENGINE_DIR, Workspace
from grader.grading.zygote_first import single_layouts
from grader.layout import Layout
from grader.submission import Submission
from grader.workers.backends import Backend, resolve
from grader.workers import timeline
from grader.workers.pool import WorkerPool

if TYPE_CHECKING:
    from grader.grading.case import Case

@dataclass
class RunResult:
    exercise: Exercise  # the graded tasks only (see Exercise.only)
    submission: Submission
    seed: int
    backend: str
    cases: list[Case]
    devices: tuple[int, ...] | None = None  # --devices, when it narrowed the course's device counts
    info: dict = field(default_factory=dict)
    wall_s: float = 0.0
    worker_s: float = 0.0
    start_s: float = 0.0
    grader_rss_mb: float = 0.0
    worker_rss_mb: float = 0.0
    student_output: dict[str, str] = field(default_factory=dict)
    unmapped_files: tuple[str, ...] = ()
    devices_here: int | None = None  # real devices of the backend; None: emulated
    sandbox: dict = field(default_factory=dict)  # what confined the workers (grader.grading.confinement.combine)
    confine_ms: float = 0.0  # how long one worker took to confine itself (median)
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped the run; ``unfinished`` tasks did not run every case
    unfinished: tuple[str, ...] = ()
    placement: list[dict] = field(default_factory=list)  # where each configuration ran (see placement())


def placement(backend: Backend, cases) -> list[dict]:
    """Where each configuration the run's cases ran on, in layout order: the machine's accelerators or, under
    ``--backend auto`` for one they cannot take, emulated CPU devices (grader.workers.backends.Backend.placed)."""
    layouts = sorted({Layout(c.devices, c.processes) for c in cases if c.devices and c.outcome != "skipped"},
                     key=lambda layout: layout.sort_key)
    return [{"devices": layout.devices, "processes": layout.processes,
             "backend": backend.placed(layout.devices, layout.processes).name,
             "where": backend.placed(layout.devices, layout.processes).describe()} for layout in layouts]


def new_seed() -> int:
    return secrets.randbelow(2**31)


@contextlib.contextmanager
def _private_bytecode(scratch: str):
    """Compile the suite into the scratch; never read or write a __pycache__ beside it (one could be planted)."""
    saved, sys.pycache_prefix = sys.pycache_prefix, os.path.join(scratch, "pycache")
    try:
        yield
    finally:
        sys.pycache_prefix = saved


@contextlib.contextmanager
def own_plugins_only():
    """pytest loads no plugin merely installed beside it (xdist, randomly, rerunfailures, ...): a grade must
    not depend on what else the machine's environment holds. A suite that needs one names it in
    ``pytest_plugins`` of its conftest.py."""
    saved = os.environ.get(AUTOLOAD)
    os.environ[AUTOLOAD] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[AUTOLOAD]
        else:
            os.environ[AUTOLOAD] = saved


def _guarded(course: Course, suite: str) -> list[str]:
    """course.yaml, the suite folder and the engine's sources: what no grading may change."""
    engine = [os.path.join(folder, name) for folder, _, names in os.walk(ENGINE_DIR) for name in names
              if name.endswith(".py")]
    return [course.path, suite, *sorted(engine)]


def suite_files(course: Course, exercise: Exercise) -> list[str]:
    """The test files of ``exercise``'s tasks that exist, as absolute paths, in the order course.yaml
    lists the tasks: pytest collects them in this order, the report's order (the plugin runs them one
    layout after another, each layout top to bottom, so a run of one layout stopped part way leaves
    only tasks below the last graded one "not reached"; with several, a task of an unfinished layout
    is unfinished)."""
    suite = os.path.join(course.root, exercise.suite)
    paths = dict.fromkeys(os.path.join(suite, f) for t in exercise.tasks for f in t.files)
    return [p for p in paths if os.path.isfile(p)]


AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def pytest_args(suite: str, files: list[str]) -> list[str]:
    """How the grader runs pytest on a suite: quiet, no cache, no user configuration."""
    return [*files, "-p", "no:terminal", "-p", "no:cacheprovider", "-c", os.devnull,
            "--rootdir", suite, "--import-mode=importlib", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


def grade(course: Course, exercise: Exercise, submission: Submission, devices=None, seed: int | None = None,
          backend: str | Backend = "cpu", timeout_s: float | None = None, require_sandbox: str = "none",
          workspace: Workspace | None = None, progress: RunProgress | None = None) -> RunResult:
    """Grade ``submission`` against the hidden suite of ``exercise``'s tasks (``backend``: a name or a
    resolved Backend).

    ``require_sandbox`` (grader.grading.confinement.LEVELS) refuses a run whose workers were not
    confined that much (pipeline.grade_submission also refuses such a machine before the run).
    ``workspace``: one that outlives this run (watch mode); by default a new one. Ctrl-C or SIGTERM
    (KeyboardInterrupt) kills the workers at once and raises :class:`Interrupted` with what was
    graded so far.
    """
    started = time.perf_counter()
    timeline.span("grader", "grade(): resolve the backend", time.monotonic())
    backend = resolve(backend) if isinstance(backend, str) else backend
    seed = new_seed() if seed is None else seed
    progress = progress or RunProgress(None)
    suite = os.path.join(course.root, exercise.suite)
    if not os.path.isdir(suite):
        raise UsageError(f"the suite folder {suite} for {exercise.name} does not exist")
    files = suite_files(course, exercise)
    guarded = _guarded(course, suite)
    before = integrity.snapshot(guarded)
    made = time.monotonic()
    space = workspace or Workspace()
    solutions = os.path.join(course.root, exercise.solutions)
    reference = solutions if os.path.isdir(solutions) else None
    try:
        space.fresh_copy(submission.found, suite, reference)
        timeline.span("grader", "make the workspace, copy the submission", made, time.monotonic())
        run = space.settings(backend=backend, memory_mb=backend.memory_limit_mb(course.memory_mb),
                             timeout_s=timeout_s or exercise.timeout_s, sandbox_off=confinement.switched_off())
        pool = WorkerPool(run, space.engine, launcher=space.launcher, spares=space.spares)
        log = io.StringIO()
        try:
            progress.starting()
            with timeline.timed("grader", "start the zygote"):
                pool.prestart(single_layouts(exercise, devices, backend))
            with timeline.timed("grader", "import pytest and the plugin"):
                import pytest  # only now, while the zygote imports JAX: the two overlap

                from grader.grading import reference_figures
                from grader.grading.plugin import GraderPlugin

            plugin = GraderPlugin(exercise, pool, seed, tuple(devices) if devices else None, timeout_s, progress,
                                  reference_figures.for_run(course.root, exercise.name, reference, suite, pool))
            with (contextlib.redirect_stdout(log), contextlib.redirect_stderr(log), _private_bytecode(space.root),
                  own_plugins_only()):
                if files:
                    pytest.main(pytest_args(suite, files), plugins=[plugin])
        except BaseException:
            pool.kill()  # interrupted before pytest ran, or the grader failed: no grace for anyone
            processes.kill_adopted()
            raise
        closing = time.monotonic()
        if plugin.interrupted:
            pool.kill()
        else:
            pool.close()
        processes.kill_adopted()  # what a worker that exited on its own left behind
        timeline.span("grader", "end the workers and the zygote", closing, time.monotonic())
        if not plugin.interrupted:
            with timeline.timed("grader", "publish what trusted workers compiled"):
                space.publish(run)
        sandbox = confinement.combine(pool.sandbox_records)
        result = RunResult(exercise=exercise, submission=submission, seed=seed, backend=backend.name,
                           cases=plugin.cases, devices=tuple(devices) if devices else None,
                           info={**pool.info(), "platform": backend.platform, "device_kind": backend.kind},
                           wall_s=time.perf_counter() - started, worker_s=pool.worker_seconds,
                           start_s=pool.start_seconds,
                           grader_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                           worker_rss_mb=pool.peak_worker_rss_kb / 1024,
                           student_output=pool.student_output, unmapped_files=tuple(sorted(plugin.unmapped_files)),
                           devices_here=backend.available, sandbox=sandbox,
                           confine_ms=confinement.median_cost_ms(pool.sandbox_records),
                           interrupted=plugin.interrupted, unfinished=plugin.unfinished() if plugin.interrupted else (),
                           placement=placement(backend, plugin.cases))
        if result.interrupted:
            raise Interrupted(result)  # the scratch is removed (finally) before the caller sees it
        space.note_run(run, *pool.layouts())
        integrity.verify(before, guarded)
        confinement.require(require_sandbox, sandbox, "this run's workers")
        if plugin.grader_errors:
            raise GraderError(plugin.grader_errors[0])
        if plugin.collection_errors:
            raise GraderError("the hidden suite could not be collected:\n" + "\n".join(plugin.collection_errors))
        return result
    finally:
        if workspace is None:
            space.close()
