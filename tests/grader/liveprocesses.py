"""What runs on this machine, seen from outside a worker's pid namespace: where the pids a worker sees mean nothing.

A test marks a process the student's code starts with a command line no other process has (``sleep
300.<unique>``), then looks for it here.
"""

from __future__ import annotations

import os
import time


def state(pid: int) -> str:
    """The state letter of ``pid`` in /proc (Z: a zombie), or "" once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return ""


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rpartition(")")[2].split()[1])


def new_marker() -> str:
    """A sleep argument no other process has."""
    return f"300.{os.getpid()}{time.monotonic_ns() % 10**9}"


def running_with(marker: str) -> list[int]:
    """Live processes (but this one) whose command line holds ``marker``."""
    found = []
    for pid in filter(lambda p: p.isdigit() and int(p) != os.getpid(), os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read() and state(int(pid)) not in ("", "Z"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def wait_until(condition, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)
