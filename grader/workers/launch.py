"""How a worker process comes to exist: forked from a zygote, or started fresh.

Either way the grader gets the same things back: a :class:`grader.processes.WorkerProcess`, the
write end of the request pipe, the read end of the reply pipe, and the worker's stdout+stderr. No
argument of the grading run is on the worker's command line: it reads its settings from the pipe.
A zygote is started per distinct worker environment (JAX and XLA read it at import and at backend
start-up); when it cannot start or refuses to fork, workers are started fresh, which is slower but
otherwise the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import BinaryIO

from grader import cgroups, processes
from grader.workers.zygote import Zygote, ZygoteError


@dataclass
class Started:
    process: processes.WorkerProcess
    request_w: int
    reply_r: int
    output: BinaryIO


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _die_with_grader() -> str:
    """Boot code (Linux) that makes the worker take SIGKILL when this grader dies, however it dies: a
    grader killed by SIGKILL cannot ask it to exit, and a worker in an endless loop never reads its pipe."""
    if not sys.platform.startswith("linux"):
        return ""
    return f"import ctypes, os; ctypes.CDLL(None).prctl(1, 9); os.getppid() == {os.getpid()} or os._exit(1); "


def spawn_fresh(engine_path: str, env: dict[str, str], cwd: str) -> Started:
    """``python -I`` running ``grader.sandbox.worker.main`` in its own session (then leaving at once, as a
    forked worker does: grader.sandbox.worker.run_then_exit)."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    boot = _die_with_grader() + processes.boot(
        engine_path, f"from grader.sandbox.worker import main, run_then_exit; run_then_exit(lambda: main({req_r}, {rep_w}))")
    try:
        popen = subprocess.Popen([sys.executable, "-I", "-c", boot], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, pass_fds=(req_r, rep_w), start_new_session=True)
    except BaseException:
        _close(req_w, rep_r)
        raise
    finally:
        _close(req_r, rep_w)
    processes.started.add(popen.pid)

    def reap(pid: int, timeout: float | None) -> processes.Exit | None:
        ended = processes.reap(pid, timeout)
        if ended is not None:
            popen.returncode = ended.code  # collected here, so Popen must not wait for it again
        return ended

    return Started(processes.WorkerProcess(popen.pid, reap), req_w, rep_r, popen.stdout)


class GroupNetwork:
    """A multi-process group's own network namespace (only a loopback), held for as long as the group runs by
    a small process that runs no student code (grader.sandbox.namespaces.hold_network); the group's
    processes join it, so their TCP connections reach each other and nothing else on the machine.

    ``pid`` is 0 where it could not be made (no namespaces here, or they are switched off): the group's
    processes then share the grader's network, and their sandbox record says so.
    """

    def __init__(self, engine_path: str, wanted: bool):
        self.pid, self._proc = 0, None
        if not wanted or not sys.platform.startswith("linux"):
            return
        boot = (f"import sys; sys.path.insert(0, {engine_path!r}); "
                "from grader.sandbox.namespaces import hold_network; hold_network()")
        self._proc = subprocess.Popen([sys.executable, "-I", "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                                      env={"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"})
        processes.started.add(self._proc.pid)
        if self._proc.stdout.readline().strip() == "ready":
            self.pid = self._proc.pid
        else:
            self.close()

    def close(self) -> None:
        """End the holding process (once the group's processes are gone, nothing else is in the namespace)."""
        if self._proc is None:
            return
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        processes.started.discard(self._proc.pid)
        self._proc, self.pid = None, 0


def fork_from(zygote: Zygote, cwd: str) -> Started:
    """A worker forked by ``zygote``; raises ZygoteError if the zygote cannot fork one."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        process = zygote.spawn(cwd, req_r, rep_w, out_w)
    except BaseException:
        _close(req_w, rep_r, out_r)
        raise
    finally:
        _close(req_r, rep_w, out_w)
    return Started(process, req_w, rep_r, os.fdopen(out_r, "rb"))


class Launcher:
    """Starts workers for one grading run, through one zygote per environment when ``use_zygote``."""

    def __init__(self, engine_path: str, use_zygote: bool, startup_timeout_s: float):
        self.engine_path, self.use_zygote, self.startup_timeout_s = engine_path, use_zygote, startup_timeout_s
        processes.adopt_orphans()
        cgroups.remove_stale()  # what a grader that died hard left (grader.cgroups)
        self._zygotes: dict[tuple, Zygote | None] = {}
        self.fallback_reason = ""

    def prepare(self, env: dict[str, str], cwd: str) -> Zygote | None:
        """The zygote for ``env``, started now (in the background) if it is not running yet."""
        key = tuple(sorted(env.items()))
        if key not in self._zygotes:
            self._zygotes[key] = (Zygote(self.engine_path, env, cwd, self.startup_timeout_s)
                                  if self.use_zygote and sys.platform.startswith("linux") else None)
        return self._zygotes[key]

    def start(self, env: dict[str, str], cwd: str) -> Started:
        zygote = self.prepare(env, cwd)
        if zygote is not None:
            try:
                return fork_from(zygote, cwd)
            except ZygoteError as exc:
                self.fallback_reason = str(exc)
                zygote.close()
                self._zygotes[tuple(sorted(env.items()))] = None
        return spawn_fresh(self.engine_path, env, cwd)

    def forget_dead(self) -> None:
        """Forget every zygote that has exited or failed, so the next worker of its environment starts a
        new one (a launcher kept across grading runs, as in watch mode, must not fall back for good)."""
        for key, zygote in list(self._zygotes.items()):
            if zygote is None or zygote.proc.poll() is not None:
                if zygote is not None:
                    zygote.close()
                del self._zygotes[key]

    def close(self) -> None:
        for zygote in self._zygotes.values():
            if zygote is not None:
                zygote.close()
        self._zygotes.clear()
