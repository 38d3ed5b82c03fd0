"""Shared helpers for the grader's own tests: build submissions, run the real `grade` CLI."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The tests grade with a shared compile cache of their own (grader.workers.compile_cache), started empty for each
# session and removed after it, never the user's: a test's outcome must not depend on what an earlier session
# compiled; within one, what trusted workers compiled is read again, as a batch's jobs read it (a program's verdict
# does not depend on whether it was compiled or read). A student's own cache is off. Its own tests set both.
if "GRADE_COMPILE_CACHE" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="grade-tests-compile-cache-")
    os.chmod(_cache, 0o711)  # workers of another uid read entries by name, as in the shared cache's own folder
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
    os.environ["GRADE_COMPILE_CACHE"] = _cache
os.environ.setdefault("GRADE_OWN_COMPILE_CACHE", "off")

GRADE = [sys.executable, "-c", "from grader.cli import main; main()"]

# A shell without job control starts a background command (`bash .ci/run &`) with SIGINT ignored,
# and every process the tests start would inherit that, so no Ctrl-C test could interrupt one (the
# grader rightly keeps an ignore it inherits). The tests' own processes start with Python's default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run_grade(*args: str, cwd: Path | str = ROOT, timeout: float = 600, env: dict | None = None):
    """Run the real CLI (`grade ARGS...`) in a subprocess; returns CompletedProcess with text output."""
    return subprocess.run([*GRADE, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def grade_json(submission: Path | str, *args: str, exercise: str = "exercise7", seed: int = 1234) -> dict:
    """Grade a submission and return the JSON report (asserts the grader itself did not fail)."""
    proc = run_grade(exercise, "--submission", str(submission), "--format", "json", "--seed", str(seed), *args)
    assert proc.returncode == 0, f"grade exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return json.loads(proc.stdout)


def task_scores(report: dict) -> dict[str, float]:
    return {t["id"]: t["score"] for t in report["tasks"]}


def task(report: dict, task_id: str) -> dict:
    return next(t for t in report["tasks"] if t["id"] == task_id)


def build_submission(folder: Path, modules: dict[str, str], base: str = "solutions",
                     exercise: str = "exercise7") -> Path:
    """``folder`` with ``exercise``/ inside: a copy of ``base``/``exercise`` (the solutions, or the stubs
    with base="exercises") whose given modules are replaced by the given (dedented) source."""
    shutil.copytree(ROOT / base / exercise, folder / exercise, ignore=shutil.ignore_patterns("__pycache__"))
    for name, source in modules.items():
        (folder / exercise / f"{name}.py").write_text(textwrap.dedent(source))
    return folder


@pytest.fixture
def make_submission(tmp_path):
    """make_submission({"dot": "source"}, base="solutions") -> a new folder from :func:`build_submission`."""
    counter = iter(range(10**6))

    def make(modules: dict[str, str], base: str = "solutions", exercise: str = "exercise7") -> Path:
        return build_submission(tmp_path / f"submission{next(counter)}", modules, base, exercise)

    return make


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one pytest process per core, at most 4 (each test's gradings start several workers)."""
    return min(4, len(os.sched_getaffinity(0)))


CATALOGUES = "tests/grader/catalogues/"
# Files of few tests that run for long (whole documented workflows, grade check, batches): xdist hands out
# files by their number of tests, most first, which would start these last, and one process would run on
# alone at the end. Only the order depends on this list.
FIRST = tuple(f"tests/grader/{name}.py" for name in (
    "authoring/test_check", "classroom/test_batch", "classroom/test_workflow", "classroom/test_slurm",
    "workers/test_accelerator_plugin", "grading/test_time_budget", "cli/test_readme_example"))


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, but every catalogue file (tests/grader/catalogues) goes to the same pytest
    process: their entries are graded in runs shared across the catalogues (catalogue.py), which one
    process can share and two could not. The catalogues go first (they have the most tests), then FIRST."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class CataloguesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return CATALOGUES if path.startswith(CATALOGUES) else path

        def _assign_work_unit(self, node) -> None:
            for scope in reversed([s for s in FIRST if s in self.workqueue]):
                self.workqueue.move_to_end(scope, last=False)
            if CATALOGUES in self.workqueue:
                self.workqueue.move_to_end(CATALOGUES, last=False)
            super()._assign_work_unit(node)

    return CataloguesTogether(config, log)
