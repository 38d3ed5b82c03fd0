"""Workers forked from the zygote are as isolated as fresh ones, and both leave nothing behind.

Each isolation test runs twice: with workers forked from a zygote (the default) and with fresh
worker processes. A "spy" submission reports what its worker process can see from inside.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import ROOT
from liveprocesses import new_marker, parent, running_with, state, wait_until
from grader import cgroups
from grader.errors import StudentFailure
from grader.layout import Layout
from grader.workers import worker as workers
from grader.workers.backends import EMULATED
from grader.workers.pool import WorkerPool
from grader.workers.worker import RunSettings, worker_environment

MEMORY_MB = 2048
SET_BY_JAX = {"TPU_SKIP_MDS_QUERY"}  # JAX's own import sets it when it finds no TPU
TIMEOUT_S = 20.0

SPY = '''
import os, resource, subprocess, time

import numpy as np


def facts():
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[name] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass  # the descriptor listdir used, closed by now
    return {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "sid": os.getsid(0),
            "fds": {k: v for k, v in fds.items() if not v.startswith("/proc/")},
            "env": dict(os.environ), "cwd": os.getcwd(),
            "rlimit_as": list(resource.getrlimit(resource.RLIMIT_AS)),
            "rlimit_data": list(resource.getrlimit(resource.RLIMIT_DATA))}


def hog(mb):
    return int(np.ones(mb << 20, np.uint8).sum())


def compile_something():
    import jax
    return float(jax.jit(lambda x: x * 2 + 1)(1.0))


def listing(path):
    return sorted(os.listdir(path))


def hang(marker):
    subprocess.Popen(["sleep", marker])
    while True:
        time.sleep(0.01)


def shout_and_die():
    print("x" * (60 << 10), flush=True)
    os._exit(1)


def exit_early(marker):
    subprocess.Popen(["sleep", marker])
    time.sleep(1)  # long enough for the test to see the child from outside
    os._exit(3)
'''


@pytest.fixture
def spy_dirs(tmp_path):
    """(submission, suite, engine) folders: the spy module, an empty suite, the grader package alone."""
    submission, suite, engine = tmp_path / "submission", tmp_path / "suite", tmp_path / "engine"
    for d in (submission, suite, engine):
        d.mkdir()
    (submission / "spy.py").write_text(textwrap.dedent(SPY))
    (engine / "grader").symlink_to(ROOT / "grader")
    return submission, suite, engine


@pytest.fixture(params=[True, False], ids=["zygote", "fresh"])
def forked(request) -> bool:
    return request.param


@pytest.fixture
def pool(forked, spy_dirs):
    submission, suite, engine = spy_dirs
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, MEMORY_MB, TIMEOUT_S), str(engine),
                      use_zygote=forked)
    yield pool
    pool.close()


def call(pool: WorkerPool, target: str, *args, timeout_s: float | None = None):
    return pool.request(Layout(1), "call", target, args, {}, target, timeout_s)


def holder(pool: WorkerPool) -> int:
    """The pid the grader knows its worker by: the holder outside the worker's own pid namespace
    (grader.sandbox.namespaces), where the pids the worker itself sees mean nothing."""
    return pool.worker(Layout(1)).proc.pid


def call_in_background(pool: WorkerPool, target: str, *args, timeout_s: float | None = None):
    """Start ``call`` in a thread; returns (thread, outcome: filled with the value or the exception)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call(pool, target, *args, timeout_s=timeout_s)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for init to collect it counts as gone)."""
    return state(pid) in ("", "Z")


def wait_gone(*pids: int, within_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and not all(gone(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if not gone(p)]


def test_worker_is_forked_from_the_zygote_or_started_fresh(pool, forked):
    call(pool, "spy.facts")
    assert (parent(holder(pool)) != os.getpid()) == forked


def test_worker_has_its_own_session_process_group_and_pid_namespace(pool):
    facts = call(pool, "spy.facts")
    pid = holder(pool)
    assert os.getsid(pid) == os.getpgid(pid) == pid
    assert pid not in (os.getpgid(0), parent(pid))
    assert (facts["pid"], facts["ppid"]) == (2, 0)  # pid 1 is its namespace's init; its parent is outside


def test_worker_has_the_memory_limit(pool):
    """Bounded by what it uses (a memory cgroup, else RLIMIT_DATA), never by its address space."""
    facts = call(pool, "spy.facts")
    assert facts["rlimit_as"] == [resource.RLIM_INFINITY] * 2
    per_process = [MEMORY_MB << 20] * 2 if cgroups.survey()["memory"] else [resource.RLIM_INFINITY] * 2
    assert facts["rlimit_data"] == per_process
    with pytest.raises(StudentFailure) as failure:
        call(pool, "spy.hog", MEMORY_MB + 256)
    assert failure.value.kind == "memory"


def test_worker_sees_only_the_sanitised_environment_and_its_scratch_folder(pool, spy_dirs, monkeypatch):
    monkeypatch.setenv("GRADER_SECRET_CANARY", "must not leak")
    facts = call(pool, "spy.facts")
    submission = str(spy_dirs[0])
    env = {k: v for k, v in facts["env"].items() if k not in SET_BY_JAX}
    assert env == worker_environment(submission, "cpu", TIMEOUT_S)
    assert facts["cwd"] == submission


def test_worker_cannot_see_the_graders_file_descriptors(pool, tmp_path):
    secret = tmp_path / "grader-only.txt"
    fd = os.open(secret, os.O_CREAT | os.O_RDWR)
    os.set_inheritable(fd, True)  # even a descriptor the grader marked inheritable stays out
    try:
        fds = call(pool, "spy.facts")["fds"]
    finally:
        os.close(fd)
    assert fds["0"] == os.devnull
    assert fds["1"] == fds["2"] and fds["1"].startswith("pipe:")
    others = {k: v for k, v in fds.items() if k not in ("0", "1", "2")}
    assert len(others) == 2 and all(v.startswith("pipe:") for v in others.values()), fds


def test_xla_flags_of_the_sanitised_environment_reach_the_worker(pool, spy_dirs, monkeypatch):
    dump = spy_dirs[0] / "xla-dump"  # in the submission's folder: the only one a confined worker may write

    def with_dump(*args):
        env = worker_environment(*args)
        return dict(env, XLA_FLAGS=env["XLA_FLAGS"] + f" --xla_dump_to={dump}")

    monkeypatch.setattr(workers, "worker_environment", with_dump)
    assert call(pool, "spy.compile_something") == 3.0
    assert call(pool, "spy.listing", str(dump))  # in the worker's private scratch


@pytest.mark.parametrize("target, kind, phrase", [("spy.hang", "timeout", "timed out"),
                                                   ("spy.exit_early", "died", "exit code 3")])
def test_a_worker_that_ends_takes_everything_it_started_with_it(pool, target, kind, phrase):
    """Killed at its time limit, or exiting on its own: the child it started goes with it."""
    marker = new_marker()
    thread, outcome = call_in_background(pool, target, marker, timeout_s=3)
    wait_until(lambda: running_with(marker))
    worker = holder(pool)
    thread.join(30)
    failure = outcome["error"]
    assert isinstance(failure, StudentFailure) and failure.kind == kind and phrase in failure.message
    wait_until(lambda: not running_with(marker), within_s=5)
    assert wait_gone(worker) == []
    call(pool, "spy.facts")
    assert holder(pool) != worker  # the next call gets a new worker


def test_output_is_capped_in_all_however_often_the_worker_is_replaced(spy_dirs):
    submission, suite, engine = spy_dirs
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, MEMORY_MB, TIMEOUT_S), str(engine))
    for _ in range(4):
        with pytest.raises(StudentFailure):
            call(pool, "spy.shout_and_die")
    pool.close()
    kept = pool.student_output[str(Layout(1))]
    assert len(kept) < 2 * workers.OUTPUT_CAP and kept.count("of a later worker process not kept") >= 2


def test_closing_the_pool_ends_workers_and_zygote(spy_dirs):
    submission, suite, engine = spy_dirs
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, MEMORY_MB, TIMEOUT_S), str(engine))
    call(pool, "spy.facts")
    worker_pid = holder(pool)
    zygote_pid = parent(worker_pid)
    pool.close()
    assert wait_gone(worker_pid, zygote_pid, within_s=1) == []
    assert pool.peak_worker_rss_kb > 0 and pool.worker_seconds > 0


def test_a_grader_that_dies_takes_zygote_and_busy_workers_with_it(spy_dirs):
    """The zygote reads end-of-file on its channel when the grader is gone, and ends its workers."""
    submission, suite, engine = spy_dirs
    marker = new_marker()
    code = textwrap.dedent(f"""
        import os, sys, threading, time
        sys.path.insert(0, {str(ROOT / "tests" / "grader")!r})
        from grader.layout import Layout
        from grader.workers.backends import EMULATED
        from grader.workers.pool import WorkerPool
        from grader.workers.worker import RunSettings
        from liveprocesses import parent, running_with
        run = RunSettings({str(submission)!r}, {str(suite)!r}, EMULATED, {MEMORY_MB}, {TIMEOUT_S})
        pool = WorkerPool(run, {str(engine)!r})
        threading.Thread(target=pool.request, args=(Layout(1), "call", "spy.hang", ({marker!r},), {{}}, "hang"),
                         daemon=True).start()
        def sleeping():  # a process forked from this one holds the marker too, until it execs
            found = []
            for pid in running_with({marker!r}):
                try:
                    with open(f"/proc/{{pid}}/comm") as f:
                        found += [pid] if f.read().strip() == "sleep" else []
                except OSError:
                    continue
            return found
        while not sleeping():
            time.sleep(0.05)
        worker = parent(parent(sleeping()[0]))  # sleep <- the worker <- its holder, the zygote's fork
        print(worker, parent(worker), flush=True)
        os._exit(0)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=120, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    worker_pid, zygote_pid = map(int, proc.stdout.split())
    assert wait_gone(worker_pid, zygote_pid) == []
    wait_until(lambda: not running_with(marker), within_s=5)


def test_a_zygote_that_is_not_fork_safe_is_not_used(spy_dirs, monkeypatch):
    """With two BLAS threads NumPy's import starts a thread in the zygote: workers start fresh instead."""
    monkeypatch.setattr(workers, "worker_environment",
                        lambda *a: dict(worker_environment(*a), OPENBLAS_NUM_THREADS="2"))
    submission, suite, engine = spy_dirs
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, MEMORY_MB, TIMEOUT_S), str(engine))
    try:
        call(pool, "spy.facts")
        assert parent(holder(pool)) == os.getpid()
        assert "threads" in pool._launcher.fallback_reason
    finally:
        pool.close()


@pytest.mark.parametrize("setup, hazard", [
    ("import threading, time; threading.Thread(target=time.sleep, args=(5,), daemon=True).start()", "threads"),
    ("import jax; jax.devices()", "backend"),
])
def test_fork_hazards_are_detected(setup, hazard):
    code = f"{setup}\nfrom grader.sandbox.forkserver import fork_hazards\nprint(fork_hazards())"
    env = dict(os.environ, JAX_PLATFORMS="cpu", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert hazard in out.stdout, out.stderr
