"""Grader-side handle on the zygote: a pre-warmed parent that forks each worker in milliseconds.

Starting a worker as a fresh process costs a Python start and ``import jax`` (about half a second
to a second of CPU). The zygote (:mod:`grader.sandbox.forkserver`, which says why forking it is
safe) pays that once per grading run; each worker is then an ``os.fork`` of it (a few ms). Only the
zygote can collect a forked worker's exit, so the grader asks it to (``reap``); the zygote never
reaps on its own, which keeps a dead worker's pid (and so its process-group id) reserved until the
grader has killed the group.

Control channel: a SOCK_SEQPACKET socket pair, one JSON message per packet; ``spawn`` carries the
worker's three pipe ends as SCM_RIGHTS file descriptors.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time

from grader import processes
from grader.workers import timeline

PACKET = 1 << 16


class ZygoteError(Exception):
    """The zygote could not start or serve a fork; the caller falls back to fresh processes."""


class Zygote:
    """Grader-side handle on one zygote process (thread-safe: one request at a time)."""

    def __init__(self, engine_path: str, env: dict[str, str], cwd: str, startup_timeout_s: float):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        boot = processes.boot(engine_path, "from grader.sandbox.forkserver import main; main()")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", boot, str(theirs.fileno())], cwd=cwd, env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), start_new_session=True)
        finally:
            theirs.close()
        processes.started.add(self.proc.pid)
        self._sock = ours
        self._lock = threading.Lock()
        self._ready_by = time.monotonic() + startup_timeout_s
        self._ready = False

    def _ask(self, message: dict, fds: tuple[int, ...] = ()) -> dict:
        with self._lock:
            try:
                if not self._ready:
                    self._await_ready()
                socket.send_fds(self._sock, [json.dumps(message).encode()], list(fds))
                raw = self._sock.recv(PACKET)
            except OSError as exc:
                raise ZygoteError(f"the zygote's channel failed: {exc}") from None
        if not raw:
            raise ZygoteError("the zygote exited")
        reply = json.loads(raw)
        if "error" in reply:
            raise ZygoteError(reply["error"])
        return reply

    def _await_ready(self) -> None:
        self._sock.settimeout(max(0.0, self._ready_by - time.monotonic()))
        try:
            raw = self._sock.recv(PACKET)
        except TimeoutError:
            raise ZygoteError("the zygote did not start in time") from None
        finally:
            self._sock.settimeout(None)
        hello = json.loads(raw) if raw else {"message": "it exited during start-up"}
        if not hello.get("ready"):
            raise ZygoteError(f"the zygote could not start: {hello.get('message')}")
        self._ready = True
        timeline.steps("zygote", hello.get("moments"), self.proc.pid)

    def spawn(self, cwd: str, request_r: int, reply_w: int, output_w: int) -> processes.WorkerProcess:
        """Fork a worker running ``grader.sandbox.worker.main`` (pipes at REQUEST_FD, REPLY_FD)."""
        reply = self._ask({"op": "spawn", "cwd": cwd}, (request_r, reply_w, output_w))
        if isinstance(reply.get("later"), list) and len(reply["later"]) == 2:
            timeline.span("zygote", "set up LAPACK (after the first fork)", *reply["later"])
        return processes.WorkerProcess(reply["pid"], self.reap)

    def reap(self, pid: int, timeout: float | None) -> processes.Exit | None:
        try:
            reply = self._ask({"op": "reap", "pid": pid, "timeout": timeout})
        except ZygoteError:  # the zygote is gone and cannot collect it: end the worker's group here
            processes.kill_group(pid)
            return processes.Exit(-signal.SIGKILL, 0)
        if "code" not in reply:
            return None
        return processes.Exit(reply["code"], reply["maxrss_kb"], reply["oom_kills"], tuple(reply["limits_hit"]))

    def close(self) -> None:
        """End the zygote; it kills and collects any worker still running."""
        self._sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            processes.kill_group(self.proc.pid)
            self.proc.wait()
