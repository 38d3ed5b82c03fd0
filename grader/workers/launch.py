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

from grader import processes
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


def spawn_fresh(engine_path: str, env: dict[str, str], cwd: str) -> Started:
    """``python -I`` running ``grader.sandbox.worker.main`` in its own session."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    boot = (f"import sys; sys.path.insert(0, {engine_path!r}); from grader.sandbox.worker import main; "
            f"main({req_r}, {rep_w})")
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
