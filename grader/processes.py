"""Ending a worker and everything it started: kill its descendants and process group, then collect its exit.

A worker runs in its own session, so its process group holds the worker and whatever the student's
code started. The group is killed *before* the worker is reaped: while the worker is an unreaped
zombie its pid cannot be handed out again, so ``killpg(pid)`` can only reach the worker's own group.
The pid the grader knows is the worker's *holder* (grader.sandbox.namespaces): the student's code
runs two levels below it, in a pid namespace of its own that ends with it; from here every process
of that namespace is a descendant of the holder, so the same code ends them all.
The same code serves both ways a worker is started: the grader reaps the workers it spawned itself,
the zygote reaps the workers it forked (only a process's parent can collect its exit status).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Callable

from grader import cgroups


@dataclass(frozen=True)
class Exit:
    """How a worker ended: its exit code (negative: killed by that signal), its peak memory (of its largest
    process), how many of its processes its memory cgroup's OOM killer ended, and the bounds of its control
    groups it ran into: "memory", "tasks" (grader.cgroups; none where it had no groups)."""

    code: int
    maxrss_kb: int
    oom_kills: int = 0
    limits_hit: tuple[str, ...] = ()


def _parents(zombies: bool = False) -> dict[int, int]:
    """pid -> parent pid of every live process this one can see in /proc (none without /proc); ``zombies``:
    of every process not yet collected too."""
    parents = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # the command name may hold spaces and ")"
        except OSError:  # it ended meanwhile
            continue
        if zombies or fields[0] != b"Z":
            parents[int(name)] = int(fields[1])
    return parents


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid``, children first."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, queue = [], [pid]
    while queue:
        kids = children.get(queue.pop(0), [])
        found += kids
        queue += kids
    return found


def _kill(kill, pid: int) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the engine's checkout: above grader/


def holds_checkout(folder: str) -> bool:
    """Whether ``folder`` is the engine's checkout or holds it (and with it the course's solutions and suites)."""
    return os.path.commonpath([os.path.abspath(folder), CHECKOUT]) == os.path.abspath(folder)


def python_path(environ=None) -> tuple[str, ...]:
    """The folders of PYTHONPATH (the grader's own by default) that the engine's Pythons get back: each folder
    that exists, in order, except the engine's checkout or a folder above it (workers reach the engine
    through their workspace's link, never the solutions beside it)."""
    value = (os.environ if environ is None else environ).get("PYTHONPATH", "")
    return tuple(p for p in value.split(os.pathsep) if p and os.path.isdir(p) and not holds_checkout(p))


def boot(engine_path: str, code: str) -> str:
    """``python -I -c`` code that runs ``code`` with the engine first on sys.path, then the grader's PYTHONPATH
    folders (:func:`python_path`): -I ignores PYTHONPATH, and where JAX is found only through it (a TPU VM's
    image) a worker or the device probe would otherwise have no JAX."""
    return f"import sys; sys.path[:0] = {[engine_path, *python_path()]!r}; {code}"


started: set[int] = set()  # processes the engine started in this process (workers, zygotes); see kill_adopted
_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process a child subreaper (Linux): a worker's orphans come here, not to init.

    A confined worker keeps everything it starts in its own tree while it lives; if it exits
    first, its orphans are adopted by the nearest subreaper above it, where kill_adopted ends them.
    """
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


ADOPTED_GRACE_S = 10.0  # how long kill_adopted waits for what it killed to be collectable


def kill_adopted() -> None:
    """Kill every child of this process (and its tree) that it did not start, a dead worker's orphans, and
    collect them all.

    A child the engine did not register, but that shares this process's session, is the embedding
    program's own and is left alone; a worker and its descendants always run in sessions of their own.
    Zombies are collected too, and without blocking on any one child: when a worker's holder dies
    before the worker, both the worker (a zombie by then) and its pid namespace's init come here, and
    that init cannot finish ending its namespace until the worker's zombie is collected.
    """
    me, session = os.getpid(), os.getsid(0)
    adopted = []
    for child, parent in _parents(zombies=True).items():
        if parent != me or child in started:
            continue
        try:
            if os.getsid(child) == session:
                continue
        except ProcessLookupError:
            continue
        kill_group(child)
        adopted.append(child)
    deadline = time.monotonic() + ADOPTED_GRACE_S
    while adopted and time.monotonic() < deadline:
        for child in list(adopted):
            try:
                if os.waitpid(child, os.WNOHANG)[0]:  # it is this process's child now: collect it
                    adopted.remove(child)
            except ChildProcessError:
                adopted.remove(child)
        if adopted:
            time.sleep(0.005)


def kill_group(pid: int) -> None:
    """SIGKILL everything ``pid`` started, its process group, and ``pid`` itself.

    A confined worker is in a pid namespace of its own, or else a child subreaper
    (grader.sandbox.confine), so while it lives every process it started is its descendant,
    whatever setsid and double forks it used: those are killed first, again until none is left (a
    fork bomb forks between two passes), then the worker.
    """
    for _ in range(100):
        tree = descendants(pid)
        if not tree:
            break
        for child in tree:
            _kill(os.kill, child)
    for kill in (os.killpg, os.kill):
        _kill(kill, pid)


def _has_exited(pid: int) -> bool:
    """True once child ``pid`` has ended; it stays a zombie (not reaped) so its group id stays its own."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def reap(pid: int, timeout: float | None) -> Exit | None:
    """Wait up to ``timeout`` s (None: as long as it takes) for child ``pid`` to end; None if it has not.

    Once it has ended, whatever is left of its process group is killed, the child is collected, and its
    control groups are read and removed.
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
    started.discard(pid)
    kill_adopted()
    counted = cgroups.collect(pid)
    hit = tuple(name for name, key in (("memory", "memory_hits"), ("tasks", "task_hits")) if counted.get(key))
    return Exit(os.waitstatus_to_exitcode(status), usage.ru_maxrss, counted.get("oom_kills", 0), hit)


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
