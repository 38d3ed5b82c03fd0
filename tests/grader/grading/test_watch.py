"""grade --watch: a save regrades, no state crosses rounds, Ctrl-C ends everything with exit 130."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import GRADE, ROOT

from grader.grading import watch
from grader.sandbox import confine

# Correct, but fails if it finds state an earlier round left: a key it has seen in this process
# (a module global) or a marker file in its cwd. Each round calls it once per length and device count, and
# traces it (its x a tracer) once per length the structural test reads.
STATEFUL_DOT = '''
import os

import jax
import jax.numpy as jnp
from jax import lax

_seen = set()


def distributed_dot(x, y):
    key = f"{jax.device_count()}-{x.shape[0]}" + ("-traced" if isinstance(x, jax.core.Tracer) else "")
    if key in _seen or os.path.exists(f"seen-{key}.txt"):
        raise RuntimeError(f"state from an earlier round: {key}")
    _seen.add(key)
    open(f"seen-{key}.txt", "w").close()
    n = jax.device_count()
    pad = (-x.shape[0]) % n
    x, y = jnp.pad(x, (0, pad)).reshape(n, -1), jnp.pad(y, (0, pad)).reshape(n, -1)
    return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(x, y)[0]
'''


class Session:
    """A ``grade --watch`` process whose reports are read line by line, with a time limit."""

    def __init__(self, submission: Path, tmp: Path):
        tmp.mkdir()
        self.tmp = tmp
        self.proc = subprocess.Popen([*GRADE, "exercise7", "--submission", str(submission), "--task", "dot",
                                      "--devices", "1,2", "--watch"], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp)})
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def report(self, timeout: float = 120) -> str:
        got, deadline = [], time.monotonic() + timeout
        while not got or not got[-1].startswith("watching "):
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, "the session ended:\n" + "".join(got) + self.proc.stderr.read()
            got.append(line)
        return "".join(got)

    def processes_left(self) -> list[str]:
        """Processes whose command line names this session's temporary folder (zygote, workers)."""
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(self.tmp) in cmdline:
                left.append(f"{pid}: {cmdline}")
        return left


@pytest.fixture
def session(make_submission, tmp_path):
    submission = make_submission({"dot": STATEFUL_DOT})
    s = Session(submission, tmp_path / "tmp")
    s.folder = submission / "exercise7"
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()


def _dot_line(report: str) -> str:
    return next(line for line in report.splitlines() if line.startswith("  dot "))


def test_a_save_regrades_with_fresh_state_and_ctrl_c_ends_the_session(session):
    first = session.report()
    assert "15 / 15   passed" in _dot_line(first)
    assert "watching " in first and "Ctrl-C to stop" in first

    (session.folder / "seen-1-3.txt").write_text("")  # the detector works: a marker it must find
    planted = session.report()
    assert planted.startswith("\nsaved seen-1-3.txt · graded in ")
    assert "state from an earlier round: 1-3" in planted
    assert re.search(r"^changed: dot 15 -> \d+(\.\d)? \(passed -> (partial|failed)\)$", planted, re.M), planted

    (session.folder / "seen-1-3.txt").unlink()  # now only what earlier rounds left could trip it
    dot = session.folder / "dot.py"
    dot.write_text(dot.read_text() + "\n# saved again\n")
    again = session.report()
    assert "saved dot.py, seen-1-3.txt" in again
    assert "15 / 15   passed" in _dot_line(again), again
    assert "-> 15 (" in again

    session.proc.send_signal(signal.SIGINT)
    assert session.proc.wait(timeout=30) == 130
    assert "interrupted" in session.proc.stderr.read()
    assert session.processes_left() == []
    assert os.listdir(session.tmp) == []


def test_watch_refuses_machine_formats():
    proc = subprocess.run([*GRADE, "exercise7", "--submission", str(ROOT / "solutions"), "--watch", "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--watch draws the text report" in proc.stderr


def test_a_save_burst_is_one_change(tmp_path):
    module = tmp_path / "dot.py"
    module.write_text("v0")
    before = watch.snapshot(str(tmp_path))

    def burst():
        for i in range(1, 4):
            time.sleep(0.03)
            module.write_text("v" * (i + 1))

    writer = threading.Thread(target=burst)
    writer.start()
    after = watch.wait_for_change(str(tmp_path), before, poll_s=0.01, quiet_s=0.1)
    writer.join()
    assert after == watch.snapshot(str(tmp_path))
    assert after["dot.py"][1] == 4
    assert watch.changed_files(before, after) == ["dot.py"]


def test_new_and_deleted_files_count_as_changes(tmp_path):
    (tmp_path / "a.py").write_text("a")
    before = watch.snapshot(str(tmp_path))
    (tmp_path / "a.py").unlink()
    (tmp_path / "b.py").write_text("b")
    assert watch.changed_files(before, watch.snapshot(str(tmp_path))) == ["a.py", "b.py"]


def test_a_watched_notebook_is_the_one_file_watched(tmp_path):
    (tmp_path / "other.py").write_text("x")
    notebook = tmp_path / "work.ipynb"
    notebook.write_text("{}")
    assert list(watch.snapshot(str(notebook))) == ["work.ipynb"]


def _submission_and_suite(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "dot.py").write_text("x = 1\n")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "probes_dot.py").write_text("y = 2\n")
    (tmp_path / "suite" / "test_dot.py").write_text("hidden = 3\n")
    return str(tmp_path / "sub"), str(tmp_path / "suite")


def test_the_workspace_is_emptied_between_rounds(tmp_path):
    from grader.grading.workspace import Workspace

    source, suite = _submission_and_suite(tmp_path)
    space = Workspace()
    try:
        code, probes = space.fresh_copy(source, suite)
        Path(code, "left.txt").write_text("state")
        Path(space.root, "beside.txt").write_text("state")
        locked = Path(code, "locked")
        locked.mkdir()
        locked.chmod(0)  # a folder the student's code made unreadable must not stop the next round
        assert space.fresh_copy(source, suite) == (code, probes)
        assert sorted(os.listdir(code)) == ["dot.py"]
        assert sorted(os.listdir(space.root)) == ["clean", "engine", "in-use.lock", "probes", "reference", "submission"]
        assert os.listdir(space.engine) == ["grader"] and os.listdir(probes) == ["probes_dot.py"]
        assert confine._unreadable_for_others([probes, space.engine]) == ""  # a worker's own uid reads them
    finally:
        space.close()
    assert not os.path.exists(space.root)


def test_a_zygote_killed_during_a_round_is_replaced_for_the_next(tmp_path):
    import signal as signals

    from grader.grading.workspace import Workspace
    from grader.workers.worker import worker_environment

    source, suite = _submission_and_suite(tmp_path)
    space = Workspace()
    try:
        code, _ = space.fresh_copy(source, suite)
        env = worker_environment(code, "cpu", 30)
        first = space.launcher.prepare(env, code)
        assert space.fresh_copy(source, suite)[0] == code and space.launcher.prepare(env, code) is first
        os.kill(first.proc.pid, signals.SIGKILL)
        first.proc.wait()
        space.fresh_copy(source, suite)
        assert space.launcher.prepare(env, code) is not first
    finally:
        space.close()
