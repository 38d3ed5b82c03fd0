"""Grader-side handles on worker processes: start, ask, time out, kill, replace.

One worker per backend configuration (e.g. CPU with 4 emulated devices) is started lazily and
reused for every test of a grading run. A call that overruns its time limit, or a worker that dies,
costs only that call: the worker is killed (its whole process group) and the next call starts a
fresh one. The student's stdout/stderr are drained by a thread into a capped buffer, so an output
flood neither blocks the worker nor fills the grader's memory.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from dataclasses import dataclass

from grader import protocol
from grader.backends import EMULATED, Backend
from grader.launch import Launcher
from grader.processes import WorkerProcess
from grader.verdicts import GraderError, StudentFailure

OUTPUT_CAP = 64 << 10
STARTUP_TIMEOUT_S = 120.0
DEATH_GRACE_S = 5.0  # how long a worker whose pipe closed may take to finish dying
# XLA's CPU runtime aborts a collective that not every device joins (see worker_environment's flags).
_STUCK_COLLECTIVE = re.compile(r"Termination timeout for `([a-z -]+?) RendezvousKey.*?Expected (\d+) threads to "
                               r"join the rendezvous, but only (\d+) of them arrived", re.S)
_MEMORY_MARKERS = (b"RESOURCE_EXHAUSTED", b"bad_alloc", b"MemoryError", b"Cannot allocate memory",
                   b"out of memory", b"Out of memory")


@dataclass(frozen=True)
class Config:
    """One backend configuration: which platform and how many devices a worker sees.

    ``processes`` set means a group of that many workers joined by ``jax.distributed``, each
    with ``devices`` local devices (see grader.multiprocess).
    """

    backend: str
    devices: int
    processes: int | None = None

    def __str__(self) -> str:
        devices = f"{self.devices} device{'s' if self.devices != 1 else ''}"
        if self.processes is None:
            return devices
        return f"{self.processes} process{'es' if self.processes != 1 else ''} x {devices}"


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

    def text(self) -> str:
        out = self.head.decode("utf-8", "replace")
        if self.total > len(self.head):
            out += f"\n[... output capped: {self.total - len(self.head)} more bytes not kept]"
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
    return env


class Worker:
    """One worker process for one configuration."""

    def __init__(self, config: Config, submission: str, suite: str, engine_path: str,
                 memory_mb: int, timeout_s: float, env: dict[str, str] | None = None):
        self.config, self.submission, self.suite = config, submission, suite
        self.engine_path, self.memory_mb, self.timeout_s = engine_path, memory_mb, timeout_s
        self.env = env or {}  # this process's own variables: its share of the devices, its place in a group
        self.launcher = Launcher(engine_path, use_zygote=False, startup_timeout_s=STARTUP_TIMEOUT_S)  # see WorkerPool
        self.proc: WorkerProcess | None = None
        self.start_s = 0.0  # seconds spent waiting for worker processes to be ready
        self.peak_rss_kb = 0
        self.output: CapturedOutput | None = None
        self.transcripts: list[str] = []  # captured output of each process this worker has run
        self.info: dict = {}
        self.sandbox_records: list[dict] = []  # what each process it started could confine (grader.sandbox.confine)

    def start(self) -> None:
        began = time.perf_counter()
        self.spawn()
        self.wait_ready(time.monotonic() + STARTUP_TIMEOUT_S)
        self.start_s += time.perf_counter() - began

    def environment(self) -> dict[str, str]:
        return {**worker_environment(self.submission, self.config.backend, self.timeout_s), **self.env}

    def spawn(self) -> None:
        """Start the process; it reports ready (or why not) on the reply pipe."""
        os.makedirs(os.path.join(self.submission, ".tmp"), exist_ok=True)
        from grader.grading.confinement import switched_off

        args = ["--submission", self.submission, "--suite", self.suite, "--backend", self.config.backend,
                "--devices", str(self.config.devices), "--memory-mb", str(self.memory_mb),
                "--sandbox-off", ",".join(sorted(switched_off()))]
        started = self.launcher.start(args, self.environment(), self.submission)
        self.proc, self._req, self._rep = started.process, started.request_w, started.reply_r
        self.output = CapturedOutput(started.output)

    def wait_ready(self, deadline: float) -> None:
        """Wait for the spawned worker to set up JAX; GraderError (worker killed) if it does not."""
        try:
            header, _ = protocol.receive(self._rep, deadline)
        except protocol.ChannelClosed:
            raise GraderError(f"{self.death('start-up')}\nits output:\n{self.output.text()[-2000:]}") from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise GraderError(f"a worker for {self.config} did not start ({exc})\nits output:\n"
                              f"{self.output.text()[-2000:]}") from None
        if not header.get("ready"):
            self.kill()
            raise GraderError(f"a worker for {self.config} could not set up JAX: {header.get('message')}")
        self.info = header
        self.sandbox_records.append(header["sandbox"])

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def fileno(self) -> int:
        """The reply pipe, so callers can ``select`` on several workers at once."""
        return self._rep

    def request(self, op: str, target: str, args: tuple, kwargs: dict, what: str,
                timeout_s: float | None = None) -> tuple[object, float]:
        """Run one request; returns (value, seconds the worker spent) or raises StudentFailure."""
        if not self.alive:
            self.kill()
            self.start()
        timeout_s = timeout_s or self.timeout_s
        tree, blobs = protocol.encode({"args": tuple(args), "kwargs": dict(kwargs)})
        self.send(op, target, tree, blobs, what)
        return self.reply(what, time.monotonic() + timeout_s, timeout_s)

    def send(self, op: str, target: str, tree, blobs: list[bytes], what: str) -> None:
        """Send one encoded request (see protocol.encode) without waiting for the reply."""
        try:
            protocol.send(self._req, {"op": op, "target": target, "args": tree}, blobs)
        except BrokenPipeError:
            raise self.death(what) from None

    def reply(self, what: str, deadline: float, timeout_s: float) -> tuple[object, float]:
        """The reply to the request in flight: (value, seconds the worker spent) or StudentFailure."""
        try:
            header, reply_blobs = protocol.receive(self._rep, deadline)
        except protocol.ChannelTimeout:
            self.kill()
            raise StudentFailure("timeout", f"{what} timed out after {timeout_s:g} s "
                                 f"({self.config}); an endless loop, or a collective some devices never reach?") from None
        except protocol.ChannelClosed:
            raise self.death(what) from None
        except protocol.ProtocolError as exc:
            self.kill()
            raise StudentFailure("bad_return", f"{what} produced a reply the grader refuses: {exc}") from None
        if not header.get("ok"):
            raise StudentFailure(header.get("kind", "raised"), header.get("message", "failed"),
                                 header.get("where"), header.get("exc_type"))
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
        near_limit = self.memory_mb and rusage_kb >= 0.9 * (self.memory_mb << 10)
        stuck = _STUCK_COLLECTIVE.search(self.output.tail.decode("utf-8", "replace"))
        if stuck:
            op, expected, arrived = stuck.groups()
            return StudentFailure("deadlock", f"{what} never finished a collective: only {arrived} of {expected} "
                                  f"devices reached its {op} ({self.config}). Every device must run the same "
                                  "collectives: a psum inside lax.cond or an if on the device index deadlocks")
        if near_limit or any(m in self.output.tail for m in _MEMORY_MARKERS):
            return StudentFailure("memory", f"{what} exceeded the {self.memory_mb} MB memory limit "
                                  f"({self.config}) and the worker died")
        if code is not None and code < 0:
            sig = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            how = f"signal {-code}: {sig}"
        else:
            how = f"exit code {code}"
        return StudentFailure("died", f"the worker died ({how}) during {what} ({self.config})")

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
            if self.output.total:
                self.transcripts.append(self.output.text())

    def ask_to_exit(self) -> None:
        """Ask the worker to leave its request loop (does not wait; see stop)."""
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


class WorkerPool:
    """Workers by configuration, started on first use and replaced after a failure.

    A configuration with ``processes`` gets a grader.multiprocess.WorkerGroup, which answers the
    same calls. On a backend whose devices cannot be shared (TPU), starting one configuration's
    worker first stops the others.
    """

    def __init__(self, submission: str, suite: str, engine_path: str, memory_mb: int, timeout_s: float,
                 backend: Backend = EMULATED, use_zygote: bool = True):
        self._args = (submission, suite, engine_path, memory_mb, timeout_s)
        self.backend = backend
        self._launcher = Launcher(engine_path, use_zygote, STARTUP_TIMEOUT_S)
        self._workers: dict[Config, Worker] = {}
        self.student_output: dict[str, str] = {}
        self.worker_seconds = 0.0

    def worker(self, config: Config) -> Worker:
        if config not in self._workers:
            if config.processes:
                from grader.multiprocess import WorkerGroup  # it builds on this module

                self._workers[config] = WorkerGroup(config, self._args, self.backend)
            else:
                self._workers[config] = Worker(config, *self._args, env=self.backend.worker_variables(config.devices))
                self._workers[config].launcher = self._launcher  # fork it from this run's zygote
        chosen = self._workers[config]
        if self.backend.exclusive and not chosen.alive:
            for other in self._workers:
                if other != config and self._workers[other].alive:
                    self._retire(other)
        return chosen

    def prestart(self, configs) -> None:
        """Start (in the background) what workers for ``configs`` will be forked from."""
        for config in configs:
            if not config.processes:
                self._launcher.prepare(self.worker(config).environment(), self._args[0])

    @property
    def start_seconds(self) -> float:
        return sum(getattr(w, "start_s", 0.0) for w in self._workers.values())

    @property
    def sandbox_records(self) -> list[dict]:
        """The sandbox record of every worker process started so far (groups: of each member)."""
        return [r for w in self._workers.values() for r in w.sandbox_records]

    @property
    def peak_worker_rss_kb(self) -> int:
        return max((getattr(w, "peak_rss_kb", 0) for w in self._workers.values()), default=0)

    def request(self, config: Config, op: str, target: str, args, kwargs, what: str, timeout_s=None):
        value, elapsed = self.worker(config).request(op, target, args, kwargs, what, timeout_s)
        self.worker_seconds += elapsed
        return value

    def info(self) -> dict:
        """What the workers reported about JAX and their devices (from any one that started)."""
        for w in self._workers.values():
            if w.info:
                return {k: w.info[k] for k in ("jax_version", "platform", "device_kind")}
        return {}

    def _retire(self, config: Config) -> None:
        w = self._workers[config]
        w.ask_to_exit()
        self._keep_output(config, w.stop())

    def _keep_output(self, config: Config, text: str) -> None:
        if text.strip():
            self.student_output[str(config)] = self.student_output.get(str(config), "") + text

    def close(self) -> None:
        for w in self._workers.values():
            w.ask_to_exit()
        for config, w in self._workers.items():
            self._keep_output(config, w.stop())
        self._launcher.close()
