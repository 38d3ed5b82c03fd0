"""The multi-process backend end to end on CPU: processes joined by jax.distributed over gloo.

A group a test makes itself starts its processes fresh (the path a GPU or TPU takes); a grading run's
pool forks them from its zygote. These tests use few layouts and share nothing slow.
"""

import json
import os
import shutil
import signal
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from grader.errors import StudentFailure
from grader.layout import Layout
from grader.protocol import PerProcess
from grader.workers import group as multiprocess
from grader.workers.backends import EMULATED, Backend
from grader.workers.group import WorkerGroup
from grader.workers import pool as pool_module
from grader.workers.pool import WorkerPool
from grader.workers.worker import RunSettings
from conftest import ROOT, grade_json, run_grade, task

DIES_ON_PROCESS_1 = """
    import os

    import jax
    from jax.experimental import multihost_utils


    def global_mean(local_batch):
        if jax.process_index() == 1:
            os._exit(3)
        return multihost_utils.process_allgather(local_batch).mean(axis=(0, 1))
"""


RAISES_ON_PROCESS_1 = """
import jax
from jax.experimental import multihost_utils


def global_mean(local_batch):
    if jax.process_index() == 1:
        raise ValueError("process 1 found uneven rows")
    return {after}
"""


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line or working folder contains ``text`` (how we find leftover workers)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (text in cmdline or text in cwd) and state != "Z":
            found.append(int(pid))
    return found


@pytest.fixture
def group_in(tmp_path):
    """group_in(layout_processes, devices) -> a WorkerGroup over a scratch copy of the solutions."""
    submission = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions" / "exercise7", submission)
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "grader").symlink_to(ROOT / "grader")
    groups = []

    def make(processes: int, devices: int, sandbox_off: tuple[str, ...] = ()) -> WorkerGroup:
        run = RunSettings(str(submission), str(ROOT / "tests" / "exercise7"), EMULATED, 4096, 30.0, sandbox_off)
        groups.append(WorkerGroup(Layout(devices, processes), run, str(tmp_path / "engine")))
        return groups[-1]

    yield make
    for g in groups:
        g.kill()


def test_solutions_pass_at_every_layout():
    report = grade_json(ROOT / "solutions", "--task", "multihost")
    multihost = task(report, "multihost")
    assert (multihost["score"], multihost["status"], multihost["extra_credit"]) == (5, "passed", True)
    assert {(c["processes"], c["devices"]) for c in multihost["cases"]} == {(2, 2), (4, 1)}
    assert all(c["outcome"] == "passed" for c in multihost["cases"])


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def test_on_emulated_devices_a_runs_group_is_forked_from_its_zygote(tmp_path):
    submission = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions" / "exercise7", submission)
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "grader").symlink_to(ROOT / "grader")
    run = RunSettings(str(submission), str(ROOT / "tests" / "exercise7"), EMULATED, 4096, 30.0)
    pool = WorkerPool(run, str(tmp_path / "engine"))
    try:
        group = pool.worker(Layout(1, 2))
        values, _ = group.request("call", "multihost.global_mean", (np.ones((1, 3), np.float32),), {}, "global_mean")
        parents = {_parent(m.proc.pid) for m in group.members}
        assert len(parents) == 1 and os.getpid() not in parents  # one parent, the zygote, not this process
        assert [np.asarray(v).tolist() for v in values] == [[1.0, 1.0, 1.0]] * 2
    finally:
        pool.kill()


def test_a_process_that_dies_mid_call_stops_the_whole_group(make_submission, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    submission = make_submission({"multihost": DIES_ON_PROCESS_1})
    started = time.monotonic()
    proc = run_grade("exercise7", "--submission", str(submission), "--format", "json", "--task", "multihost",
                     "--devices", "2", env={"TMPDIR": str(scratch)})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    multihost = task(report, "multihost")
    assert multihost["status"] == "crashed"
    assert "process 1 of 2: the worker died (exit code 3) during a call into your code (2 processes x 2 devices)" \
        in multihost["reason"]
    assert {c["message"] for c in multihost["cases"] if c["processes"] == 4} == {"left out by --devices 2"}
    assert time.monotonic() - started < 3 * 30, "each case must end well inside its 30 s time limit"
    assert _processes_mentioning(str(scratch)) == []


def _start_in_background(group: WorkerGroup):
    """Start ``group`` in a thread; returns (thread, outcome, pids) as soon as every process is spawned."""
    outcome = {}

    def start():
        try:
            group.start()
        except StudentFailure as failure:
            outcome["failure"] = failure

    thread = threading.Thread(target=start)
    thread.start()
    while not (len(group.members) == group.layout.processes and group.members[-1].proc is not None):
        time.sleep(0.005)
    return thread, outcome, [m.proc.pid for m in group.members]


def test_a_process_that_dies_before_joining_is_reported_at_once(group_in):
    started = time.monotonic()
    thread, outcome, pids = _start_in_background(group_in(2, 2))
    os.kill(pids[1], signal.SIGKILL)  # long before it could import JAX and join
    thread.join(60)
    failure = outcome["failure"]
    assert failure.kind == "died"
    assert failure.message.startswith("process 1 of 2 did not join the others: the worker died (signal 9: SIGKILL) "
                                      "during start-up (2 processes x 2 devices)")
    assert time.monotonic() - started < multiprocess.JOIN_TIMEOUT_S / 2
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids), "every process of the group must be gone"


def test_a_process_that_hangs_before_joining_ends_the_start_at_the_join_timeout(group_in, monkeypatch):
    monkeypatch.setattr(multiprocess, "JOIN_TIMEOUT_S", 8.0)
    started = time.monotonic()
    thread, outcome, pids = _start_in_background(group_in(2, 1))
    os.kill(pids[1], signal.SIGSTOP)
    thread.join(60)
    assert outcome["failure"].kind == "timeout"
    assert outcome["failure"].message == "the 2 processes did not all join within 8 s (2 processes x 1 device)"
    assert 8 <= time.monotonic() - started < 20
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


@pytest.mark.parametrize("after, others", [
    ("multihost_utils.process_allgather(local_batch).mean(axis=(0, 1))  # waits for process 1 forever",
     "process 0 never finished (still waiting 5 s later, in a collective the others never reached)"),
    ("local_batch.mean(axis=0)", "process 0 returned a value"),
])
def test_a_case_where_only_some_processes_raise_fails_naming_the_others(group_in, tmp_path, after, others):
    """Every process must meet the expectation: one ValueError among processes that hang or return is no
    pass for a test that expects ValueError (the suite once counted it as one)."""
    group = group_in(2, 1)
    (tmp_path / "submission" / "multihost.py").write_text(RAISES_ON_PROCESS_1.format(after=after))
    batches = [np.ones((1, 3), np.float32)] * 2
    with pytest.raises(StudentFailure) as info:
        group.request("probe", "multihost_probes.global_mean", (PerProcess(tuple(batches)),), {}, "global_mean")
    failure = info.value
    assert failure.kind == "diverged" and failure.exc_type == "ValueError" and failure.where == "multihost.py:8"
    assert failure.message == (f"the processes disagree: process 1 of 2 raised, but {others}; every process must "
                               "raise, or return, alike. process 1 of 2: global_mean() raised ValueError at `raise "
                               "ValueError(\"process 1 found uneven rows\")`: process 1 found uneven rows")


def test_a_taken_port_is_retried_and_gloo_lines_are_not_student_output(group_in, monkeypatch):
    """Only where the group shares the grader's network (no namespaces here): in one of its own no port is taken."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        offered, real_free_port = [], multiprocess.free_port

        def taken_port_first() -> int:
            offered.append(real_free_port() if offered else taken.getsockname()[1])
            return offered[-1]

        monkeypatch.setattr(multiprocess, "free_port", taken_port_first)
        group = group_in(2, 1, sandbox_off=("namespaces",))
        group.start()
    assert len(offered) == 2, "process 0 could not bind the taken port, so the group retried on another"
    assert [m.info["process_index"] for m in group.members] == [0, 1]
    batches = [np.full((1, 3), 1.0, np.float32), np.full((1, 3), 3.0, np.float32)]
    values, _ = group.request("probe", "multihost_probes.global_mean", (PerProcess(tuple(batches)),), {},
                              "global_mean")
    assert [v.tolist() for v in values] == [[2.0, 2.0, 2.0]] * 2
    pids = [m.proc.pid for m in group.members]
    group.ask_to_exit()
    printed = "".join(m.stop() for m in group.members)
    assert "[Gloo] Rank" in printed
    assert multiprocess.student_text(printed + "mine\n") == "mine\n"
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_a_group_joins_in_a_network_of_its_own_and_its_record_holds_the_network_layer(group_in):
    """What its processes may reach there is tried in test_confine.py; here, that gloo and the coordinator work."""
    group = group_in(2, 1)
    group.start()
    batches = [np.full((1, 3), 1.0, np.float32), np.full((1, 3), 3.0, np.float32)]
    values, _ = group.request("probe", "multihost_probes.global_mean", (PerProcess(tuple(batches)),), {},
                              "global_mean")
    assert [v.tolist() for v in values] == [[2.0, 2.0, 2.0]] * 2
    assert all("network" in r["held"] for r in group.sandbox_records), group.sandbox_records
    group.stop()


class ChipWorker:
    """A worker as the pool sees it, that records who holds the chips: at most one may (Backend.exclusive)."""

    log: list = []  # (event, role, devices)

    def __init__(self, layout, run, launcher, clean_dir=None, reference_dir=None, warm_up=False):
        self.layout, self.run, self.env = layout, run, run.backend.worker_variables(layout.devices)
        self.role = "clean" if clean_dir else "reference" if reference_dir else "worker"
        self.alive, self.before_start = False, None

    def request(self, op, target, *args):
        if not self.alive:
            if self.before_start:
                self.before_start()
            holders = [w for w in ChipWorker.everyone if w.alive]
            assert not holders, f"{self.role} {self.layout} starts while {holders[0].role} holds the chips"
            ChipWorker.everyone += [] if self in ChipWorker.everyone else [self]
            ChipWorker.log.append(("start", self.role, self.layout.devices))
            self.alive = True
        return b"program" if op == "program" else {"values": [None], "hlo": "", "held": [], "outside": 0, "inside": 0}, 0.0

    def ask_to_exit(self):
        ChipWorker.log.append(("retire", self.role, self.layout.devices))

    def stop(self, grace_s=2.0):
        self.alive = False
        return ""


@pytest.fixture
def tpu_pool(monkeypatch):
    monkeypatch.setattr(pool_module, "Worker", ChipWorker)
    ChipWorker.log, ChipWorker.everyone = [], []
    tpu = Backend(name="tpu", platform="tpu", kind="TPU v5 lite", available=8, ids=tuple("01234567"))
    return WorkerPool(RunSettings("s", "t", tpu, 0, 30.0, clean_home="/clean", reference="/ref"), "e")


def test_on_tpu_one_configuration_at_a_time_holds_the_chips(tpu_pool):
    for devices in (1, 1, 2, 1):
        tpu_pool.request(Layout(devices), "call", "m.f", (), {}, "f()")
    assert [(e, d) for e, _, d in ChipWorker.log] == [("start", 1), ("retire", 1), ("start", 2), ("retire", 2),
                                                       ("start", 1)]
    assert tpu_pool.worker(Layout(4)).env["TPU_VISIBLE_CHIPS"] == "0,1,2,3"


def test_on_tpu_the_clean_and_reference_workers_take_turns_with_the_students(tpu_pool):
    """Program mode runs the student's export in a clean worker of the same layout, and compares it with the
    reference's: on a TPU each stops the one holding the chips before it starts (ChipWorker asserts it)."""
    layout = Layout(1)
    tpu_pool.program(layout, "m.f", (), [()], {}, "f()")
    tpu_pool.reference_program(layout, "m.f", (), (), {}, "f()")
    tpu_pool.request(layout, "call", "m.f", (), {}, "f()")
    assert [(e, role) for e, role, _ in ChipWorker.log] == [
        ("start", "worker"), ("retire", "worker"), ("start", "clean"), ("retire", "clean"), ("start", "reference"),
        ("retire", "reference"), ("start", "clean"), ("retire", "clean"), ("start", "worker")]
    assert [w for w in ChipWorker.everyone if w.alive] == [tpu_pool.worker(layout)]



def test_the_distributed_runtimes_own_log_at_the_end_is_not_student_output():
    """A process that outlives the group's leader logs that the coordination service is gone: not the student's."""
    printed = ("E1203 18:38:53.776329     356 coordination_service_agent.cc:289] Polled an error from coordination "
               "service\nAdditional GRPC error information from remote target coordination_service while calling "
               "/xla.coordination.CoordinationService/PollForError:\n:UNKNOWN:Error received from peer  "
               "{grpc_status:14, grpc_message:\"Socket closed\"}\nF1203 18:38:53.776353     356 client.h:80] "
               "Terminating process\nmine\n")
    assert multiprocess.student_text(printed) == "mine\n"
