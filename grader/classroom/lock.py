"""Locks that die with their holder: ``fcntl.flock`` on a file, released by the kernel when the
process holding it ends, however it ends (a SIGKILLed batch leaves no lock stuck, so no one ever
has to delete a lock file by hand). The file itself stays; only the lock on it means anything.
"""

from __future__ import annotations

import contextlib
import os

from grader.errors import UsageError
from grader.grading.held_folder import try_hold


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
