"""Watch mode's warm workspace: a compile cache for the student's workers, and spare workers.

What is kept between rounds must make a round faster and change nothing else: every round is graded
on the code saved for it (an edit after a cached round is compiled anew), spares are forked only
once the folders are empty and hold no student code, a spare that died or was made for other
settings is replaced, clean workers keep no cache, and nothing but watch mode keeps either.
"""

from __future__ import annotations

import os
import signal

import pytest
from conftest import ROOT

from grader.course import load_course
from grader.grading import pipeline
from grader.grading.workspace import Workspace
from grader.layout import Layout
from grader.sandbox import confine
from grader.workers.backends import resolve
from grader.workers.launch import Launcher
from grader.workers.spares import Spares
from grader.workers.worker import RunSettings, Worker

DEVICES = (1, 2)
WRONG_DOT = '''
import jax
import jax.numpy as jnp


def distributed_dot(x, y):
    return jnp.dot(x, y) + 1.0
'''


@pytest.fixture(scope="module")
def dot_only():
    course = load_course(str(ROOT / "course.yaml"))
    return course, course.exercise("exercise7").only(["dot"])


def _grade(dot_only, submission, space):
    course, exercise = dot_only
    return pipeline.grade_submission(course, exercise, str(submission), devices=DEVICES, seed=7, workspace=space)


def _dot(report):
    return next(t for t in report.score.tasks if t.task.id == "dot")


def _taking(spares: Spares) -> list:
    """Record what each ``take`` of ``spares`` hands out."""
    taken, take = [], spares.take

    def recording(*args, **kwargs):
        worker = take(*args, **kwargs)
        taken.append(worker)
        return worker

    spares.take = recording
    return taken


def test_rounds_take_spares_and_grade_each_save_anew(dot_only, make_submission, monkeypatch):
    monkeypatch.setenv("GRADE_COMPILE_CACHE", "off")  # the student's workers compile, and keep it, themselves
    right, wrong = make_submission({}), make_submission({"dot": WRONG_DOT})
    space = Workspace(prefix="warm-test-", warm=True)
    try:
        first = _grade(dot_only, right, space)
        assert _dot(first).score == _dot(first).task.points
        space.ready_next()
        waiting = dict(space.spares._waiting)
        # a clean worker only where a structural test ran: the dot's runs from 2 devices
        assert {(layout.devices, clean) for layout, clean in waiting} == {(1, False), (2, False), (2, True)}
        assert all(w.alive for w in waiting.values())
        assert os.listdir(space.code) == [".tmp"]  # spares wait in an emptied folder: no student code to read
        # and a worker with a uid of its own can still read the probes and reach its folders
        assert confine._unreadable_for_others([space.probes, space.engine]) == ""
        assert confine._unreadable_for_others([space.code, space.clean, space.compile_cache], read=False) == ""
        entries = {n: os.listdir(os.path.join(space.compile_cache, f"devices-{n}")) for n in DEVICES}
        assert all(entries.values()), entries  # the student's workers kept what they compiled

        taken = _taking(space.spares)
        second = _grade(dot_only, wrong, space)
        assert _dot(second).score == 0  # the cached round before does not grade this save
        assert sorted(id(w) for w in taken if w) == sorted(id(w) for w in waiting.values())

        space.ready_next()
        third = _grade(dot_only, right, space)
        assert _dot(third).score == _dot(third).task.points
        assert sorted(os.listdir(space.compile_cache)) == ["devices-1", "devices-2"]  # no clean worker's cache
    finally:
        space.close()
    assert not os.path.exists(space.root)


def test_a_dead_spare_is_replaced(dot_only, make_submission):
    right = make_submission({})
    space = Workspace(prefix="warm-test-", warm=True)
    try:
        _grade(dot_only, right, space)
        space.ready_next()
        for worker in space.spares._waiting.values():
            os.kill(worker.proc.pid, signal.SIGKILL)  # e.g. the out-of-memory killer, between two saves
        report = _grade(dot_only, right, space)
        assert _dot(report).score == _dot(report).task.points
    finally:
        space.close()


def test_a_run_with_other_settings_gets_no_spare(tmp_path):
    (tmp_path / "code").mkdir()
    run = RunSettings(str(tmp_path / "code"), "", resolve("cpu"), 2048, 30.0)
    launcher = Launcher(str(ROOT), True, 60)
    spares = Spares()
    try:
        spares.start(run, launcher, [Layout(1)], [])
        (spare,) = spares._waiting.values()
        assert spares.take(Layout(1), RunSettings(str(tmp_path / "code"), "", resolve("cpu"), 2048, 5.0)) is None
        assert not spare.alive  # killed, not left waiting
        assert spares.take(Layout(1), run) is None  # taken once at most
    finally:
        spares.close()
        launcher.close()


def test_only_a_warm_workspace_keeps_a_cache_and_only_for_student_workers(tmp_path):
    cold = Workspace()
    try:
        assert cold.spares is None and cold.settings(backend=resolve("cpu"), memory_mb=0, timeout_s=1).compile_cache == ""
    finally:
        cold.close()
    run = RunSettings("code", "probes", resolve("cpu"), 0, 1.0, compile_cache=str(tmp_path / "cache"))
    student = Worker(Layout(4), run, launcher=None)
    assert student.compile_cache() == str(tmp_path / "cache" / "devices-4") and os.path.isdir(student.compile_cache())
    assert Worker(Layout(4), run, launcher=None, clean_dir=str(tmp_path)).compile_cache() == ""
    group_member = Worker(Layout(2, 2), run, launcher=None, env={}, distributed={"coordinator": "127.0.0.1:1"})
    assert group_member.compile_cache() == ""


def test_a_workspace_a_killed_run_left_is_removed_by_the_next_one(tmp_path, monkeypatch):
    import subprocess
    import sys
    import tempfile

    made = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]); "
                             "from grader.grading.workspace import Workspace; "
                             "print(Workspace(prefix='grade-').root, flush=True); time.sleep(60)", str(ROOT)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    left = made.stdout.readline().strip()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    alive = Workspace()  # its maker still runs: left alone
    try:
        assert os.path.isdir(left)
    finally:
        alive.close()
    made.kill()  # SIGKILL: no chance to clean up
    made.wait()
    assert os.path.isdir(left)
    (tmp_path / "grade-not-a-workspace").mkdir()  # no lock: not the grader's to judge
    space = Workspace()
    try:
        assert not os.path.exists(left)
        assert sorted(os.listdir(tmp_path)) == sorted(["grade-not-a-workspace", os.path.basename(space.root)])
    finally:
        space.close()
