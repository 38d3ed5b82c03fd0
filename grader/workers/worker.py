"""The grader's handle on one worker process: start, ask, time out, kill, replace.

A call that overruns its time limit, or a worker that dies, costs only that call: the worker is
killed (its whole process group) and the next call starts a fresh one. The student's stdout/stderr
are drained by a thread into a capped buffer, so an output flood neither blocks the worker nor
fills the grader's memory. :class:`Handle` is what the pool uses, implemented by :class:`Worker`
and by the multi-process :class:`grader.workers.group.WorkerGroup`.

:mod:`grader.protocol` (and with it NumPy) is imported where a worker is first talked to, not with
this module: ``grade EXERCISE`` starts its zygote through here before it imports NumPy
(grader.grading.zygote_first).
"""

from __future__ import annotations

import os
import re
import select
import signal
import threading
import time
import dataclasses
from dataclasses import dataclass
from typing import Callable, Protocol, TypeVar

from grader.errors import GraderError, StudentFailure
from grader.layout import Layout
from grader.processes import WorkerProcess, python_path
from grader.workers.backends import Backend
from grader.workers import starvation, timeline
from grader.workers.launch import Launcher

T = TypeVar("T")
OUTPUT_CAP = 64 << 10
STARTUP_TIMEOUT_S = 120.0
DEATH_GRACE_S = 5.0  # how long a worker whose pipe closed may take to finish dying
# XLA's CPU runtime aborts a collective that not every device joins (see worker_environment's flags).
_STUCK_COLLECTIVE = re.compile(r"Termination timeout for `([a-z -]+?) RendezvousKey.*?Expected (\d+) threads to "
                               r"join the rendezvous, but only (\d+) of them arrived", re.S)
_MEMORY_MARKERS = (b"RESOURCE_EXHAUSTED", b"bad_alloc", b"MemoryError", b"Cannot allocate memory",
                   b"out of memory", b"Out of memory")


@dataclass(frozen=True)
class RunSettings:
    """What every worker of one grading run shares: the scratch copy of the submission (``code``),
    the folder its probes come from, the backend, the memory limit, the per-call time limit, the
    sandbox mechanisms to leave out (for measuring only; grader.grading.confinement.switched_off), the
    folder clean workers start in (``clean_home``, which program mode needs), in a student's own run the
    folder of their own compile caches (``compile_cache``), the shared compile cache every worker reads, the run's
    ``outbox`` where trusted workers leave what they compiled for the grader to publish there,
    whether every worker of the run is trusted (``grade check``; see :meth:`Worker.compile_cache`), and
    the folder holding a copy of the course's reference solution ("" where the course ships none: a
    Gradescope bundle), which reference workers import to compile the reference's program."""

    code: str
    probes: str
    backend: Backend
    memory_mb: int
    timeout_s: float
    sandbox_off: tuple[str, ...] = ()
    clean_home: str = ""
    compile_cache: str = ""
    shared_cache: str = ""
    outbox: str = ""
    trusted: bool = False
    reference: str = ""

    def for_layout(self, layout: Layout) -> RunSettings:
        """The settings of ``layout``'s workers: under --backend auto, a layout the accelerators cannot take
        runs on emulated CPU devices (grader.workers.backends.Backend.placed)."""
        placed = self.backend.placed(layout.devices, layout.processes)
        return self if placed is self.backend else dataclasses.replace(self, backend=placed)


class MachineFault(GraderError):
    """A call failed because of the machine, not the submission: its time limit fired while the worker was kept
    from running (grader.workers.starvation), or the machine's OOM killer ended a worker within its own memory
    limit. :meth:`Worker.request` tries such a call once more in a fresh worker; a second is the environment's
    fault (a grader error, exit 3), never a verdict."""


def again_if_the_machine_failed(attempt: Callable[[], T], fresh: str) -> T:
    """``attempt()`` (one call, in a worker or group it starts when none is alive); once more after a MachineFault,
    which killed what it ran in; a second MachineFault is the machine's fault, said so (``fresh``: what the two
    attempts ran in, "workers" or "groups")."""
    try:
        return attempt()
    except MachineFault:
        pass
    try:
        return attempt()
    except MachineFault as fault:
        raise MachineFault(f"{fault} twice, in two {fresh}: this is the machine, not the submission; "
                           "grade it again when the machine is less busy") from None


class Handle(Protocol):
    """What the pool asks of a worker, single or multi-process."""

    layout: Layout
    info: dict
    start_s: float  # seconds spent waiting for its processes to be ready
    peak_rss_kb: int
    sandbox_records: list[dict]  # what confined each process it started (grader.sandbox.confine)

    @property
    def alive(self) -> bool: ...

    def request(self, op: str, target: str, args: tuple, kwargs: dict, what: str,
                timeout_s: float | None = None) -> tuple[object, float]: ...

    def ask_to_exit(self) -> None: ...

    def stop(self, grace_s: float = 2.0) -> str: ...


class CapturedOutput:
    """Keeps the first OUTPUT_CAP bytes and the last 4 KiB of a stream, counts the rest."""

    def __init__(self, stream):
        self.head, self.tail, self.total = bytearray(), b"", 0
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream) -> None:
        while chunk := stream.read1(1 << 16):
            self.total += len(chunk)
            room = OUTPUT_CAP - len(self.head)
            if room > 0:
                self.head += chunk[:room]
            self.tail = (self.tail + chunk)[-4096:]
        stream.close()

    def wait(self, timeout: float = 2.0) -> None:
        self._thread.join(timeout)

    def text(self, limit: int = OUTPUT_CAP) -> str:
        """The first ``limit`` bytes kept, and a note of how many more there were."""
        kept = self.head[:limit]
        out = kept.decode("utf-8", "replace")
        if self.total > len(kept):
            out += f"\n[... output capped: {self.total - len(kept)} more bytes not kept]"
        return out


def worker_environment(scratch: str, backend: str, timeout_s: float) -> dict[str, str]:
    """A minimal environment: nothing of the grader's leaks in, XLA collectives give up in time."""
    stuck = max(1, int(timeout_s * 0.25))
    terminate = max(2, int(timeout_s * 0.75))
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": scratch,
        "TMPDIR": os.path.join(scratch, ".tmp"),
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "XLA_FLAGS": f"--xla_cpu_collective_call_warn_stuck_timeout_seconds={stuck} "
                     f"--xla_cpu_collective_call_terminate_timeout_seconds={terminate}",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "OPENBLAS_NUM_THREADS": "1",  # else NumPy's import starts a BLAS thread and the zygote may not fork
    }
    if backend == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    if python_path():  # where JAX is found through it (grader.processes.boot); student code's Pythons too
        env["PYTHONPATH"] = os.pathsep.join(python_path())
    return env


class Worker:
    """One worker process for one layout; ``env`` holds this process's own variables (its share of the
    devices), ``distributed`` its place in a multi-process group. With ``clean_dir`` it is a clean
    worker: same environment (so the same zygote forks it), but it starts in that empty folder and
    never imports student code. With ``reference_dir`` it imports the course's reference solution from
    there instead of the student's scratch (same environment, so the same zygote forks it too). With
    ``warm_up`` it compiles a small program of the grader's once JAX is set up (a spare, see
    grader.workers.spares)."""

    def __init__(self, layout: Layout, run: RunSettings, launcher: Launcher, env: dict[str, str] | None = None,
                 distributed: dict | None = None, clean_dir: str | None = None, warm_up: bool = False,
                 reference_dir: str | None = None):
        self.layout, self.run, self.launcher = layout, run, launcher
        self.clean_dir, self.reference_dir = clean_dir, reference_dir
        self.warm_up = warm_up
        self.env = env if env is not None else run.backend.worker_variables(layout.devices)
        self.distributed = distributed
        self.timeout_s = run.timeout_s
        self.proc: WorkerProcess | None = None
        self.start_s = 0.0
        self.peak_rss_kb = 0
        self.output: CapturedOutput | None = None
        self.transcripts: list[str] = []  # captured output of each process this worker has run
        self.info: dict = {}
        self.sandbox_records: list[dict] = []
        self._in_flight = ("", 0.0)  # the request awaiting its reply, and when it was sent (for the timeline)
        self.before_start: Callable[[], None] | None = None  # run before each start (the pool's: the chip to itself)

    @property
    def name(self) -> str:
        """How the timeline names it: "worker 4 devices", "clean 4 devices"."""
        return f"{self._role} {self.layout}"

    @property
    def _role(self) -> str:
        return "clean" if self.clean_dir is not None else "reference" if self.reference_dir else "worker"

    def start(self) -> None:
        began = time.perf_counter()
        self.spawn()
        self.await_ready(began)

    def await_ready(self, began: float | None = None) -> None:
        """Wait (up to STARTUP_TIMEOUT_S) for a spawned worker to be ready, counting the time since
        ``began`` (by default: now) into ``start_s``; GraderError if it does not start."""
        began = time.perf_counter() if began is None else began
        with timeline.timed("grader", f"wait for {self.name} to be ready"):
            self.wait_ready(time.monotonic() + STARTUP_TIMEOUT_S)
        self.start_s += time.perf_counter() - began

    def environment(self) -> dict[str, str]:
        return {**worker_environment(self.run.code, self.run.backend.name, self.timeout_s), **self.env}

    def compile_cache(self) -> str:
        """The folder this worker writes what it compiles to, made now; "" when it writes none.

        A trusted worker (a clean one, which never runs student code, a reference worker, or any worker
        of a trusted run: ``grade check``) writes to its own folder of the run's outbox, which the grader publishes to
        the shared cache once the run's workers are gone (grader.workers.compile_cache). In a student's own
        run (and in watch mode) a student's worker writes the student's own cache of its device count,
        which only that student's later workers of such runs read. A process of a multi-process group writes none (its programs span the group).
        """
        clean = self.clean_dir is not None
        if self.distributed:
            return ""
        if self.run.outbox and (clean or self.reference_dir or self.run.trusted):
            folder = os.path.join(self.run.outbox, f"{self._role}-{self.layout.devices}")
        elif self.run.compile_cache and not clean:
            folder = os.path.join(self.run.compile_cache, f"devices-{self.layout.devices}")
        else:
            return ""
        os.makedirs(folder, exist_ok=True)
        return folder

    def spawn(self) -> None:
        """Start the process and send its settings; it reports ready (or why not) on the reply pipe."""
        from grader import protocol

        if self.before_start is not None:
            self.before_start()
        home = self.clean_dir or self.reference_dir or self.run.code
        os.makedirs(os.path.join(home, ".tmp"), exist_ok=True)
        with timeline.timed("grader", f"start {self.name}"):
            started = self.launcher.start(self.environment(), home)
        self.proc, self._req, self._rep = started.process, started.request_w, started.reply_r
        self.output = CapturedOutput(started.output)
        settings = protocol.WorkerSettings(code=home, probes="" if self.clean_dir else self.run.probes,
                                           backend=self.run.backend.name, devices=self.layout.devices,
                                           memory_mb=self.run.memory_mb, distributed=self.distributed,
                                           clean=self.clean_dir is not None, sandbox_off=self.run.sandbox_off,
                                           compile_cache=self.compile_cache(), warm_up=self.warm_up,
                                           shared_cache="" if self.distributed else self.run.shared_cache)
        try:
            settings.send(self._req)
        except BrokenPipeError:
            pass  # it died at once: wait_ready reports how

    def wait_ready(self, deadline: float) -> None:
        """Wait for the spawned worker to set up JAX; GraderError (worker killed) if it does not."""
        from grader import protocol

        try:
            header, _ = protocol.receive(self._rep, deadline)
        except protocol.ChannelClosed:
            try:
                cause = str(self.death("start-up"))
            except MachineFault as fault:
                cause = str(fault)
            raise GraderError(f"{cause}\nits output:\n{self.output.text()[-2000:]}") from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise GraderError(f"a worker for {self.layout} did not start ({exc})\nits output:\n"
                              f"{self.output.text()[-2000:]}") from None
        if not header.get("ready"):
            self.kill()
            message = str(header.get("message"))
            within = (f" within its {self.run.memory_mb} MB memory limit" if self.run.memory_mb and any(
                m.decode() in message for m in _MEMORY_MARKERS) else "")
            raise GraderError(f"a worker for {self.layout} could not set up JAX{within}: {message}")
        self.info = header
        self.sandbox_records.append(header["sandbox"])
        timeline.steps(self.name, header.get("moments"), self.proc.pid)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def fileno(self) -> int:
        """The reply pipe, so callers can ``select`` on several workers at once."""
        return self._rep

    def request(self, op: str, target: str, args: tuple, kwargs: dict, what: str,
                timeout_s: float | None = None) -> tuple[object, float]:
        """Run one request; returns (value, seconds the worker spent) or raises StudentFailure (MachineFault
        when the machine failed it twice)."""
        from grader import protocol

        timeout_s = timeout_s or self.timeout_s
        tree, blobs = protocol.encode({"args": tuple(args), "kwargs": dict(kwargs)})

        def attempt() -> tuple[object, float]:
            if not self.alive:
                self.kill()
                self.start()
            self.send(op, target, tree, blobs, what)
            return self.reply(what, time.monotonic() + timeout_s, timeout_s)

        return again_if_the_machine_failed(attempt, "workers")

    def send(self, op: str, target: str, tree, blobs: list[bytes], what: str) -> None:
        """Send one encoded request (see protocol.encode) without waiting for the reply."""
        from grader import protocol

        try:
            protocol.send(self._req, {"op": op, "target": target, "args": tree}, blobs)
        except BrokenPipeError:
            raise self.death(what) from None
        self._in_flight = (f"{op} {target.rpartition('.')[2]}", time.monotonic())

    def reply(self, what: str, deadline: float, timeout_s: float) -> tuple[object, float]:
        """The reply to the request in flight: (value, seconds the worker spent) or StudentFailure (MachineFault
        when the time limit fired while the machine kept the worker from running)."""
        from grader import protocol

        watched = None  # (since when, what the worker had used by then), once the call has run a while
        if not select.select([self._rep], [], [], max(0.0, deadline - timeout_s * (1 - starvation.WATCH_AFTER)
                                                        - time.monotonic()))[0]:
            watched = (time.monotonic(), starvation.sample(self.proc.pid))
        try:
            header, reply_blobs = protocol.receive(self._rep, deadline)
        except protocol.ChannelTimeout:
            starved = "" if watched is None else starvation.starved(
                watched[1], starvation.sample(self.proc.pid), time.monotonic() - watched[0])
            self.kill()
            if starved:
                raise MachineFault(f"{what} ran past its {timeout_s:g} s limit ({self.layout}), but {starved}") \
                    from None
            raise StudentFailure("timeout", f"{what} timed out after {timeout_s:g} s "
                                 f"({self.layout}); an endless loop, or a collective some devices never reach?") from None
        except protocol.ChannelClosed:
            raise self.death(what) from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise StudentFailure("bad_return", f"{what} produced a reply the grader refuses: {exc}") from None
        asked, sent = self._in_flight
        timeline.span("grader", f"wait for {self.name}: {asked}", sent, time.monotonic())
        timeline.reported(self.name, asked, header.get("began"), header.get("elapsed_s"))
        if not header.get("ok"):
            raise StudentFailure.from_reply(header)
        try:
            return protocol.decode(header["value"], reply_blobs), float(header.get("elapsed_s", 0.0))
        except (protocol.ProtocolError, KeyError, IndexError, ValueError) as exc:
            raise StudentFailure("bad_return", f"{what} produced a reply the grader refuses: {exc}") from None

    def death(self, what: str) -> StudentFailure:
        """Explain why the worker went away during ``what``, then clean up."""
        proc = self.proc
        proc.wait(timeout=DEATH_GRACE_S)  # if it closed its reply pipe but lives on, kill() ends it
        self.output.wait()
        self.kill()
        code, rusage_kb = proc.exit.code, proc.exit.maxrss_kb
        near_limit = self.run.memory_mb and rusage_kb >= 0.9 * (self.run.memory_mb << 10)
        stuck = _STUCK_COLLECTIVE.search(self.output.tail.decode("utf-8", "replace"))
        if stuck:
            op, expected, arrived = stuck.groups()
            return StudentFailure("deadlock", f"{what} never finished a collective: only {arrived} of {expected} "
                                  f"devices reached its {op} ({self.layout}). Every device must run the same "
                                  "collectives: a psum inside lax.cond or an if on the device index deadlocks")
        if proc.exit.oom_kills and "memory" not in proc.exit.limits_hit:  # the machine's OOM killer, not its own
            raise MachineFault(f"the machine ran out of memory during {what} ({self.layout}) and its OOM killer "
                               f"ended the worker, which was within its {self.run.memory_mb} MB limit")
        if proc.exit.oom_kills or "memory" in proc.exit.limits_hit:  # its own memory cgroup: all its processes
            return StudentFailure("memory", f"{what} exceeded the {self.run.memory_mb} MB memory limit "
                                  f"({self.layout}): the worker's processes together held more, and it was ended")
        if "tasks" in proc.exit.limits_hit:  # its own pids cgroup refused a process or a thread before it died
            return StudentFailure("died", f"the worker died during {what} ({self.layout}) after reaching its limit "
                                  "of processes and threads (a thread or process it started was refused)")
        if near_limit or any(m in self.output.tail for m in _MEMORY_MARKERS):
            return StudentFailure("memory", f"{what} exceeded the {self.run.memory_mb} MB memory limit "
                                  f"({self.layout}) and the worker died")
        if code is not None and code < 0:
            sig = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            how = f"signal {-code}: {sig}"
        else:
            how = f"exit code {code}"
        return StudentFailure("died", f"the worker died ({how}) during {what} ({self.layout})")

    def kill(self) -> None:
        """Kill the process group (no-op if already gone) and keep what it printed."""
        if self.proc is None:
            return
        self.proc.kill()
        self.peak_rss_kb = max(self.peak_rss_kb, self.proc.exit.maxrss_kb)
        for fd in (self._req, self._rep):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc = None
        if self.output is not None:
            self.output.wait(0.5)
            if self.output.total:  # a worker replaced after every case keeps OUTPUT_CAP in all, not per process
                room = OUTPUT_CAP - sum(map(len, self.transcripts))
                self.transcripts.append(self.output.text(room) if room > 0 else
                                        f"[... {self.output.total} bytes of a later worker process not kept]")

    def ask_to_exit(self) -> None:
        """Ask the worker to leave its request loop (does not wait; see stop)."""
        from grader import protocol

        if self.proc is not None:
            try:
                protocol.send(self._req, {"op": "exit"})
            except OSError:
                pass

    def stop(self, grace_s: float = 2.0) -> str:
        """Give an asked worker ``grace_s`` to exit, then kill it; returns what it printed (once)."""
        if self.proc is not None:
            self.proc.wait(timeout=grace_s)
            self.kill()
        text, self.transcripts = "\n".join(self.transcripts), []
        return text
