"""Locks that die with their holder: ``fcntl.flock`` on a file, released by the kernel when the
process holding it ends, however it ends (a SIGKILLed batch leaves no lock stuck, so no one ever
has to delete a lock file by hand). The file itself stays; only the lock on it means anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from grader.errors import UsageError


def try_hold(path: str, create: bool = True) -> int | None:
    """A descriptor holding an exclusive lock on ``path``; None if another process holds it.

    With ``create`` False a missing file raises FileNotFoundError instead of being created.
    """
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            pid = f.read().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextlib.contextmanager
def gradebook_in_use(gradebook: str):
    """Hold ``GRADEBOOK.lock`` while a batch writes ``gradebook``; a second batch on it is a UsageError."""
    path = f"{gradebook}.lock"
    fd = try_hold(path)
    if fd is None:
        raise UsageError(f"{gradebook} is in use by another grade batch{_holder(path)}; wait for it to finish, "
                         "or grade into another --gradebook")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)
