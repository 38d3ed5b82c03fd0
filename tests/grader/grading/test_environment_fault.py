"""A crash the reference solution would hit too is the environment's fault: exit 3 with the cause, no verdict.

End to end, the machine is made unable to run workers: a course whose memory_mb is too small for JAX's
own start-up, under a memory cgroup and per process; the error names that limit. In the pool, with
stand-in workers, each rule alone.
"""

from __future__ import annotations

import pytest

from conftest import run_grade
from toycourse import write_course

from grader.errors import GraderError, StudentFailure
from grader.layout import Layout
from grader.workers import pool as pool_module

DOUBLE = "import jax\n\n\ndef double(x):\n    return jax.pmap(lambda v: v * 2)(x)\n"
SUITE = {"test_double.py": """
    from grader.suite import expect_close


    def test_double(student, rng, devices):
        x = rng.normal(size=(devices, 3))
        expect_close(student.call("double.double", x), 2 * x, what="double(x)")
    """}


@pytest.mark.parametrize("switch", ["", "cgroups"], ids=["memory cgroup where one is made", "RLIMIT_DATA"])
def test_a_reference_solution_that_cannot_run_here_is_a_grader_error(tmp_path, switch):
    """Whether its worker is bounded by a memory cgroup or per process, the error names the memory limit."""
    course = {"course": "tight", "defaults": {"devices": [1], "timeout_s": 30, "memory_mb": 24},
              "exercises": {"ex1": {"title": "T", "tasks": [{"id": "double", "title": "D", "points": 10,
                                                             "hint": "h"}]}}}
    root = write_course(tmp_path, course, SUITE, {"double.py": DOUBLE}, {"double.py": DOUBLE})
    proc = run_grade("ex1", "--submission", str(root / "solutions" / "ex1"), "--course", str(root),
                     env={"GRADE_SANDBOX": switch})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout == "", "no report: nothing was graded"
    assert "24 MB memory limit" in proc.stderr, proc.stderr  # the bound it hit, named


class _Worker:
    """A stand-in worker: a request fails as ``failure`` says; start() fails when ``broken``."""

    started: list[Layout] = []
    broken = False
    failure = StudentFailure("died", "the worker died (signal 6: SIGABRT) during double() (1 device)")

    def __init__(self, layout, run, launcher, warm_up=False, clean_dir=None, **_):
        self.layout, self.warm_up, self.clean_dir = layout, warm_up, clean_dir

    def request(self, *_args):
        raise self.failure

    def start(self):
        assert self.clean_dir == _Run.clean_home, "the check runs in a clean worker, beside none of the student's files"
        _Worker.started.append(self.layout)
        if self.broken:
            raise GraderError("the worker died (signal 6: SIGABRT) during start-up (1 device)")

    def kill(self):
        pass


class _Run:
    backend = type("Backend", (), {"exclusive": False})()
    clean_home = "/grade-x/clean"

    def for_layout(self, layout):
        return self


@pytest.fixture
def pool(monkeypatch):
    monkeypatch.setattr(pool_module, "Worker", _Worker)
    _Worker.started, _Worker.broken = [], False
    _Worker.failure = StudentFailure("died", "the worker died (signal 6: SIGABRT) during double() (1 device)")
    return pool_module.WorkerPool(_Run(), "", launcher=object())


def _ask(pool):
    return pool.request(Layout(1), "call", "double.double", (), {}, "double()")


def test_a_death_that_a_fresh_worker_also_suffers_is_a_grader_error(pool):
    _Worker.broken = True
    with pytest.raises(GraderError, match=r"fails too, so this is the environment.*during start-up"):
        _ask(pool)


def test_a_death_a_fresh_worker_does_not_suffer_is_the_submissions_and_is_checked_once(pool):
    for _ in range(2):
        with pytest.raises(StudentFailure, match="SIGABRT"):
            _ask(pool)
    assert _Worker.started == [Layout(1)], "one check per layout and run"


@pytest.mark.parametrize("kind", ["wrong", "timeout", "raised", "deadlock"])
def test_failures_the_machine_cannot_cause_are_not_checked(pool, kind):
    _Worker.failure = StudentFailure(kind, "double() is wrong")
    _Worker.broken = True
    with pytest.raises(StudentFailure):
        _ask(pool)
    assert _Worker.started == []
