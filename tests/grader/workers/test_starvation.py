"""A time limit the machine trips, or a machine's OOM kill, is never the student's fault.

Deterministic, with no race on timings: a worker is stopped (SIGSTOP) or given a CPU quota of 1 % before
its call, so it cannot run whatever the machine's load; an endless loop and a sleep stay the student's. The same
for a multi-process group, whose processes are judged together.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from grader import cgroups, processes
from grader.errors import StudentFailure
from grader.layout import Layout
from grader.workers import starvation
from grader.workers.backends import EMULATED, resolve
from grader.workers.group import WorkerGroup
from grader.workers.launch import Launcher
from grader.workers.worker import MachineFault, RunSettings, Worker

WORK = '''
import time


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def loop():
    while True:
        pass


def sleep():
    time.sleep(3600)
'''


@pytest.fixture
def code(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "work.py").write_text(WORK)
    return tmp_path / "code"


@pytest.fixture
def start(code):
    launcher = Launcher(str(ROOT), True, 60)
    made = []

    def make(timeout_s: float) -> Worker:
        worker = Worker(Layout(1), RunSettings(str(code), "", resolve("cpu"), 2048, timeout_s), launcher)
        worker.start()
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.kill()
    launcher.close()


def _call(worker: Worker, name: str, *args):
    return worker.request("call", f"work.{name}", args, {}, f"{name}()")[0]


def test_a_stopped_worker_is_not_blamed_and_its_call_runs_again_in_a_fresh_one(start):
    worker = start(3.0)
    stopped = worker.proc.pid
    for pid in processes.descendants(stopped):
        os.kill(pid, signal.SIGSTOP)
    assert _call(worker, "spin", 0.2) == 0.2
    assert worker.proc.pid != stopped


@pytest.mark.skipif(bool(cgroups.survey()["cpu"]), reason="no cpu cgroup of its own for a worker here")
def test_a_worker_held_to_1_percent_of_a_cpu_is_not_blamed(start):
    worker = start(3.0)
    throttled = worker.proc.pid
    [group] = glob.glob(os.path.join(cgroups.parents()[0]["cpu"], f"{cgroups.PREFIX}{worker.proc.pid}-*"))
    if os.path.exists(os.path.join(group, "cpu.shares")):  # every worker's group weighs the same: a core's worth each
        with open(os.path.join(group, "cpu.shares")) as f:
            assert int(f.read()) == cgroups.CPU_SHARES
    with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
        f.write("1000")  # 1 ms in every 100 ms period
    assert _call(worker, "spin", 0.5) == 0.5  # the second worker has its own group, with no quota
    assert worker.proc.pid != throttled


def test_a_stopped_group_is_not_blamed_and_runs_again_but_its_endless_loop_is_the_students(code):
    """A group's processes stopped from outside: its limit is the machine's, and the call runs again in a fresh
    group; an endless loop in every process of that group is the student's time-out all the same."""
    launcher = Launcher(str(ROOT), True, 60)
    group = WorkerGroup(Layout(1, 2), RunSettings(str(code), "", EMULATED, 2048, 3.0), str(ROOT), launcher)
    try:
        group.start()
        stopped = [m.proc.pid for m in group.members]
        for pid in stopped:
            for child in processes.descendants(pid):
                os.kill(child, signal.SIGSTOP)
        assert group.request("call", "work.spin", (0.2,), {}, "spin()")[0] == [0.2, 0.2]
        assert not {m.proc.pid for m in group.members} & set(stopped), "the call ran again in a fresh group"
        with pytest.raises(StudentFailure) as failure:
            group.request("call", "work.loop", (), {}, "loop()")
        assert failure.value.kind == "timeout"
        assert failure.value.message.startswith("loop() timed out after 3 s (2 processes x 1 device)")
    finally:
        group.kill()
        launcher.close()


def test_a_group_starved_twice_is_the_machines_fault(code, monkeypatch):
    monkeypatch.setattr(starvation, "starved", lambda *_, **__: "the group was stopped")
    launcher = Launcher(str(ROOT), True, 60)
    group = WorkerGroup(Layout(1, 2), RunSettings(str(code), "", EMULATED, 2048, 1.0), str(ROOT), launcher)
    try:
        with pytest.raises(MachineFault, match=r"sleep\(\) ran past its 1 s limit \(2 processes x 1 device\), but the "
                                               r"group was stopped twice, in two groups: this is the machine"):
            group.request("call", "work.sleep", (), {}, "sleep()")
    finally:
        group.kill()
        launcher.close()


@pytest.mark.parametrize("name", ["loop", "sleep"])
def test_an_endless_loop_or_a_sleep_is_the_students(start, name):
    worker = start(2.0)
    with pytest.raises(StudentFailure) as failure:
        _call(worker, name)
    assert failure.value.kind == "timeout" and "timed out after 2 s" in failure.value.message


def test_starved_twice_is_the_machines_fault_never_a_verdict(start, monkeypatch):
    monkeypatch.setattr(starvation, "starved", lambda *_: "the worker was stopped")
    worker = start(1.0)
    with pytest.raises(MachineFault, match=r"sleep\(\) ran past its 1 s limit .*but the worker was stopped twice, in "
                                           r"two workers: this is the machine, not the submission"):
        _call(worker, "sleep")


def test_a_worker_without_namespaces_is_its_own_holder_and_its_cpu_time_counts():
    """Without namespaces the process the grader holds is the worker: its own CPU time is what shows it ran."""
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        before, after = starvation.sample(spinning.pid), None
        for _ in range(100):  # until a clock tick of CPU shows, however busy the machine
            time.sleep(0.1)
            after = starvation.sample(spinning.pid)
            if after.cpu_s.get(spinning.pid, 0.0) > before.cpu_s.get(spinning.pid, 0.0):
                break
    finally:
        spinning.kill()
        spinning.wait()
    assert after.cpu_s.get(spinning.pid, 0.0) > before.cpu_s.get(spinning.pid, 0.0)


def _usage(cpu: float, wait: float, stopped: bool = False) -> starvation.Usage:
    return starvation.Usage({2: cpu}, {2: wait}, stopped)


@pytest.mark.parametrize("cpu, wait, stopped, blamed", [
    (2.9, 0.0, False, "student"),   # an endless loop on a quiet machine
    (0.9, 2.0, False, "student"),   # an endless loop given a third of a CPU: it still ran a fair share
    (0.0, 0.0, False, "student"),   # asleep, or waiting on a lock: its own doing
    (0.01, 0.4, False, "student"),  # a sleeper woken a hundred times a second, each time a little late
    (0.1, 2.8, False, "machine"),   # ready to run, kept waiting for a CPU
    (0.0, 0.0, True, "machine"),    # stopped
])
def test_who_is_blamed_for_a_limit(cpu, wait, stopped, blamed):
    reason = starvation.starved(_usage(0.0, 0.0), _usage(cpu, wait, stopped), 3.0)
    assert bool(reason) == (blamed == "machine"), reason


class _Ended:
    """A worker process that has ended the way ``exit`` says."""

    def __init__(self, exit):
        self.exit, self.pid = exit, 0

    def wait(self, timeout=None):
        return self.exit.code

    def kill(self):
        pass


class _Output:
    tail, total = b"", 0

    def wait(self, timeout=None):
        pass


@pytest.mark.parametrize("limits_hit, expected", [((), "machine"), (("memory",), "memory")])
def test_an_oom_kill_within_the_workers_own_limit_is_the_machines(limits_hit, expected):
    worker = Worker(Layout(1), RunSettings("code", "", resolve("cpu"), 4096, 5.0), launcher=None, env={})
    worker.proc, worker.output = _Ended(processes.Exit(-9, 200_000, 1, limits_hit)), _Output()
    worker._req = worker._rep = -1
    if expected == "machine":
        with pytest.raises(MachineFault, match="the machine ran out of memory .* within its 4096 MB limit"):
            worker.death("double()")
    else:
        assert worker.death("double()").kind == "memory"


def test_a_stopped_child_the_student_could_have_stopped_is_not_the_machines():
    """Without namespaces the holder's children are what the student's code started: stopping one of them (and
    waiting for it) is the student's own doing. Only a stopped pid namespace's init is stopped from outside."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            time.sleep(0.01)
        assert not starvation.sample(os.getpid()).stopped
    finally:
        child.kill()
        child.wait()
