"""Ending a worker and everything it started: kill its process group, then collect its exit.

A worker runs in its own session, so its process group holds the worker and whatever the student's
code started. The group is killed *before* the worker is reaped: while the worker is an unreaped
zombie its pid cannot be handed out again, so ``killpg(pid)`` can only reach the worker's own group.
The same code serves both ways a worker is started: the grader reaps the workers it spawned itself,
the zygote reaps the workers it forked (only a process's parent can collect its exit status).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Exit:
    """How a worker ended: its exit code (negative: killed by that signal) and its peak memory."""

    code: int
    maxrss_kb: int


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads, and ``pid`` itself should it have left that group."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _has_exited(pid: int) -> bool:
    """True once child ``pid`` has ended; it stays a zombie (not reaped) so its group id stays its own."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def reap(pid: int, timeout: float | None) -> Exit | None:
    """Wait up to ``timeout`` s (None: as long as it takes) for child ``pid`` to end; None if it has not.

    Once it has ended, whatever is left of its process group is killed and the child is collected.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while not _has_exited(pid):
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return None
        time.sleep(delay if left is None else min(delay, left))
        delay = min(delay * 2, 0.02)
    kill_group(pid)
    _, status, usage = os.wait4(pid, 0)
    return Exit(os.waitstatus_to_exitcode(status), usage.ru_maxrss)


class WorkerProcess:
    """A started worker: its pid, and a way to collect its exit (``reap`` with the signature above)."""

    def __init__(self, pid: int, reap_fn: Callable[[int, float | None], Exit | None]):
        self.pid = pid
        self._reap = reap_fn
        self.exit: Exit | None = None

    @property
    def returncode(self) -> int | None:
        return self.exit.code if self.exit else None

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once the worker has ended (within ``timeout`` s), else None."""
        if self.exit is None:
            self.exit = self._reap(self.pid, timeout)
        return self.returncode

    def poll(self) -> int | None:
        return self.wait(0)

    def kill(self) -> None:
        """Kill the worker and its whole process group, and collect it."""
        if self.exit is None:
            kill_group(self.pid)
            self.wait()
