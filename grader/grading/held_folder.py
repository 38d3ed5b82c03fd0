"""Temporary folders that show whether the process that made them still runs, so that whoever comes
next can remove what a killed one left behind.

A held folder holds a lock file its maker keeps an ``fcntl.flock`` on for as long as it uses the
folder. The kernel drops the lock when that process ends, however it ends (SIGKILL, a crash, a
power cut), so an unlocked folder is one nobody uses: :func:`remove_stale` removes those. Grading
runs (grader.grading.workspace) and batches (grader.classroom.scratch) keep their copies of
students' code in such folders.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile

LOCK = "in-use.lock"


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


class HeldFolder:
    """A new folder in the temporary folder, locked from the moment it can be found until it is removed."""

    def __init__(self, prefix: str):
        self.path = tempfile.mkdtemp(prefix=prefix)
        fresh = os.path.join(self.path, LOCK + ".new")
        self._fd = try_hold(fresh)
        os.rename(fresh, os.path.join(self.path, LOCK))  # others judge a folder only once it has LOCK, held

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._fd)


def remove_stale(prefix: str, root: str | None = None) -> int:
    """Remove the held folders named ``prefix*`` in ``root`` (the temporary folder) whose maker is gone;
    returns how many were removed. A folder without a lock, or one this user may not lock, is left."""
    root = root or tempfile.gettempdir()
    removed = 0
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not name.startswith(prefix) or not os.path.isdir(folder) or os.path.islink(folder):
            continue
        try:
            fd = try_hold(os.path.join(folder, LOCK), create=False)
        except OSError:  # no lock yet (one starting up), or not ours to judge
            continue
        if fd is None:
            continue  # its maker runs
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    return removed
