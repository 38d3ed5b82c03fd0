"""The multi-process backend: P workers joined by ``jax.distributed`` on a localhost coordinator.

Multi-host JAX code (``jax.process_index()``, ``jax.make_array_from_process_local_data``) only
runs for real with several processes. A :class:`WorkerGroup` starts P ordinary workers
(:class:`grader.workers.worker.Worker`), each with D local devices and its place in the group in its settings;
process 0 also runs the coordinator. On the cpu backend the processes talk through gloo. Every
request goes to all processes and the answer is a list with one result per process, in process
order. If any process dies or overruns, the whole group is killed: the others would wait forever in
a collective it never reaches. A time limit that fires while the machine kept the group from running
(grader.workers.starvation: its processes' CPU time together, against the call's wall time) is not the
student's: the call runs once more in a fresh group, and a second such limit is the machine's fault.

Pitfalls measured on JAX 0.10.2 that shape this module:

- a process that never joins makes the others wait for JAX's initialization timeout (300 s by
  default): the group kills every process as soon as one dies or JOIN_TIMEOUT_S passes, and gives
  JAX a timeout just past that (a backstop if the grader itself is gone);
- a coordinator port already taken crashes process 0 ("Failed to add port", then SIGSEGV): the
  group picks a free port and, if process 0 still loses it, retries with another;
- once joined, SIGTERM is ignored while the preemption service runs: workers disable it, and the
  grader kills with SIGKILL anyway;
- gloo prints "[Gloo] Rank r is connected to ..." lines into the worker's output: dropped here;
- a process that connects before the coordinator listens waits for gRPC's first back-off, a second:
  each waits for the port first (grader.sandbox.worker), and the group then joins in a few tenths
  of a second; the processes start in parallel and the group is kept for the whole grading run,
  like any worker;
- at exit jax.distributed's shutdown barrier holds every process 0.6 s: workers leave with os._exit.

The group has a network of its own (grader.workers.launch.GroupNetwork): its processes reach each
other on localhost and no other group's coordinator, nor any port of the grader's machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import time

from grader import protocol
from grader.errors import GraderError, StudentFailure
from grader.layout import Layout, plural
from grader.workers import starvation
from grader.workers.launch import GroupNetwork, Launcher
from grader.workers.worker import STARTUP_TIMEOUT_S, MachineFault, RunSettings, Worker, again_if_the_machine_failed

JOIN_TIMEOUT_S = 60.0
_JAX_INIT_TIMEOUT_S = int(JOIN_TIMEOUT_S) + 15
PORT_ATTEMPTS = 3
FAILURE_GRACE_S = 5.0  # after one process fails, how long the others get to answer before the group is killed
_PORT_TAKEN = "Failed to add port"
_GLOO_PREFIX = "[Gloo] "
# What JAX's distributed runtime logs when a group ends (a process that outlives the leader sees the service
# gone), and the two lines gRPC adds to such an entry (what the service said, the status it ended with).
_RUNTIME_LINE = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ (?:coordination_service\w*|client)\.(?:cc|h):\d+\] "
                           r"|Additional GRPC error information from remote target "
                           r"|:[A-Z_]+:Error received from peer ")


def free_port() -> int:
    """A localhost TCP port nobody holds right now (it may be taken again before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def student_text(output: str) -> str:
    """A process's captured output without gloo's connection lines and the distributed runtime's own log."""
    return "".join(line for line in output.splitlines(keepends=True)
                   if not line.startswith(_GLOO_PREFIX) and not _RUNTIME_LINE.match(line))


def _processes(indices: list[int]) -> str:
    """"process 0", "processes 0 and 2", "processes 0, 1 and 3"."""
    names = [str(i) for i in indices]
    if len(names) == 1:
        return f"process {names[0]}"
    return f"processes {', '.join(names[:-1])} and {names[-1]}"


class _PortTaken(Exception):
    """Process 0 could not bind the coordinator's port."""


class WorkerGroup:
    """The processes of one multi-process layout; implements grader.workers.worker.Handle.

    Its members get their place in the group in their settings, which JAX reads only once forked, so
    on emulated devices (where every member's environment is a single worker's) they are forked from
    the run's zygote (``launcher``) like any worker: four fresh Python processes importing JAX at once
    took most of a 4x1 group's start on two cores. Elsewhere each member's environment names its own
    devices, and they start fresh.
    """

    def __init__(self, layout: Layout, run: RunSettings, engine_path: str, launcher: Launcher | None = None):
        self.layout, self.run = layout, run
        self.timeout_s = run.timeout_s
        self._launcher = launcher or Launcher(engine_path, use_zygote=False, startup_timeout_s=STARTUP_TIMEOUT_S)
        self._engine_path = engine_path
        self._network: GroupNetwork | None = None
        self.members: list[Worker] = []
        self.info: dict = {}
        self.start_s = 0.0
        self.peak_rss_kb = 0
        self._past_records: list[dict] = []  # of members replaced since

    @property
    def alive(self) -> bool:
        return bool(self.members) and all(m.alive for m in self.members)

    @property
    def sandbox_records(self) -> list[dict]:
        return self._past_records + [r for m in self.members for r in m.sandbox_records]

    def _spawn(self, port: int) -> None:
        self._past_records = self.sandbox_records
        self.members = []
        if self._network is None:
            off = self.run.sandbox_off
            self._network = GroupNetwork(self._engine_path, wanted="all" not in off and "namespaces" not in off)
        for i in range(self.layout.processes):
            group = {"coordinator": f"127.0.0.1:{port}", "process": i, "processes": self.layout.processes,
                     "timeout_s": _JAX_INIT_TIMEOUT_S, "network": self._network.pid}
            self.members.append(Worker(self.layout, self.run, self._launcher,
                                       env=self.run.backend.worker_variables(self.layout.devices, i),
                                       distributed=group))
            self.members[-1].spawn()

    def start(self) -> None:
        """Start every process and wait until all have joined; StudentFailure says why they did not."""
        self.kill()
        began = time.perf_counter()
        try:
            for _ in range(PORT_ATTEMPTS):
                self._spawn(free_port())
                try:
                    self._join(time.monotonic() + JOIN_TIMEOUT_S)
                    return
                except _PortTaken:
                    continue
        finally:
            self.start_s += time.perf_counter() - began
        raise GraderError(f"the coordinator for {self.layout} found no free localhost port in {PORT_ATTEMPTS} tries")

    def _join(self, deadline: float) -> None:
        pending = list(self.members)
        while pending:
            ready = select.select(pending, [], [], max(0.0, deadline - time.monotonic()))[0]
            if not ready:
                self.kill()  # joining is a barrier: everyone waits for the slowest, so no one is to blame
                processes = plural(self.layout.processes, "process", "processes")
                raise StudentFailure("timeout", f"the {processes} did not all join within "
                                     f"{JOIN_TIMEOUT_S:g} s ({self.layout})")
            for m in ready:
                i = self.members.index(m)
                try:
                    m.wait_ready(deadline)
                except GraderError as exc:
                    port_taken = i == 0 and _PORT_TAKEN in m.output.text()
                    self.kill()
                    if port_taken:
                        raise _PortTaken from None
                    raise StudentFailure("died", f"process {i} of {self.layout.processes} did not join the others: "
                                                 f"{str(exc).splitlines()[0]}") from None
                pending.remove(m)
        self.info = dict(self.members[0].info, processes=self.layout.processes)

    def request(self, op: str, target: str, args: tuple, kwargs: dict, what: str,
                timeout_s: float | None = None) -> tuple[list, float]:
        """Send one request to every process (a protocol.PerProcess argument: each its own element of it);
        returns ([value per process], slowest worker time)."""
        timeout_s = timeout_s or self.timeout_s
        request = {"args": tuple(args), "kwargs": dict(kwargs)}
        encoded = [protocol.encode(protocol.for_process(request, i)) for i in range(self.layout.processes)]

        def attempt() -> tuple[list, float]:
            if not self.alive:
                self.start()
            for i, m in enumerate(self.members):
                try:
                    m.send(op, target, *encoded[i], what)
                except StudentFailure as failure:
                    raise self._stopped(i, failure) from None
            return self._collect(what, time.monotonic() + timeout_s, timeout_s)

        return again_if_the_machine_failed(attempt, "groups")

    def _usage(self) -> starvation.Usage:
        return starvation.sample(*(m.proc.pid for m in self.members if m.proc is not None))

    def _collect(self, what: str, deadline: float, timeout_s: float) -> tuple[list, float]:
        results: list = [None] * len(self.members)
        failures: list[tuple[int, StudentFailure]] = []
        pending = list(self.members)
        watch_at = deadline - timeout_s * (1 - starvation.WATCH_AFTER)
        watched = None  # (since when, what the group's processes had used by then), once the call has run a while
        while pending:
            until = deadline if watched else min(deadline, watch_at)
            ready = select.select(pending, [], [], max(0.0, until - time.monotonic()))[0]
            if not ready and not watched and time.monotonic() < deadline:
                watched = (time.monotonic(), self._usage())
                continue
            if not ready:  # the rest may be stuck in a collective that a failed process never reaches
                if failures:
                    self.kill()
                    raise self._diverged(failures, returned=[i for i, r in enumerate(results) if r is not None],
                                         hung=[self.members.index(m) for m in pending])
                starved = "" if watched is None else starvation.starved(
                    watched[1], self._usage(), time.monotonic() - watched[0], who="the group")
                self.kill()
                if starved:
                    raise MachineFault(f"{what} ran past its {timeout_s:g} s limit ({self.layout}), but {starved}")
                raise StudentFailure("timeout", f"{what} timed out after {timeout_s:g} s ({self.layout}); an endless "
                                     "loop, or a collective some processes never reach?")
            for m in ready:
                i = self.members.index(m)
                pending.remove(m)
                try:
                    results[i] = m.reply(what, deadline, timeout_s)
                except StudentFailure as failure:
                    if not m.alive:  # it died: the others may wait for it in a collective forever
                        raise self._stopped(i, failure) from None
                    failures.append((i, failure))
                    deadline = min(deadline, time.monotonic() + FAILURE_GRACE_S)
        if not failures:
            return [value for value, _ in results], max(elapsed for _, elapsed in results)
        if len(failures) < len(self.members):
            raise self._diverged(failures, returned=[i for i, r in enumerate(results) if r is not None], hung=[])
        if len({f.message for _, f in failures}) == 1:
            raise failures[0][1]
        i, failure = failures[0]
        raise failure.reworded(self._on(i, failure))

    def _on(self, i: int, failure: StudentFailure) -> str:
        return f"process {i} of {self.layout.processes}: {failure.message}"

    def _diverged(self, failures: list[tuple[int, StudentFailure]], returned: list[int], hung: list[int]):
        """Some processes raised while others returned or never finished: the case fails whatever it
        expected, since every process of a layout must meet it (a check only some processes reach
        leaves the others waiting in a collective, the way a real cluster would hang)."""
        others = ([f"{_processes(returned)} returned a value"] if returned else []) + \
            ([f"{_processes(hung)} never finished (still waiting {FAILURE_GRACE_S:g} s later, in a collective the "
              "others never reached)"] if hung else [])
        i, failure = failures[0]
        told = (f"the processes disagree: {_processes([j for j, _ in failures])} of {self.layout.processes} raised, "
                f"but {' and '.join(others)}; every process must raise, or return, alike. {self._on(i, failure)}")
        return failure.reworded(told, kind="diverged")

    def _stopped(self, i: int, failure: StudentFailure) -> StudentFailure:
        """Kill the whole group after process ``i`` failed in a way the others cannot recover from."""
        self.kill()
        return failure.reworded(self._on(i, failure))

    def kill(self) -> None:
        """SIGKILL every process at once (a survivor would log the coordinator's death), then reap them."""
        for m in self.members:
            if m.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(m.proc.pid, signal.SIGKILL)
        for m in self.members:
            m.kill()
            self.peak_rss_kb = max(self.peak_rss_kb, m.peak_rss_kb)

    def ask_to_exit(self) -> None:
        for m in self.members:
            m.ask_to_exit()

    def stop(self, grace_s: float = 2.0) -> str:
        """Stop every process and the group's network; returns what each printed (gloo's lines left out),
        under its number."""
        parts = []
        for i, m in enumerate(self.members):
            text = student_text(m.stop(grace_s))
            self.peak_rss_kb = max(self.peak_rss_kb, m.peak_rss_kb)
            if text.strip():
                parts.append(f"--- process {i} ---\n{text}")
        if self._network is not None:
            self._network.close()
            self._network = None
        return "".join(parts)
