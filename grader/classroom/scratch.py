"""Where a batch keeps copies of students' code while it grades them, and how a later batch finds
what a killed one left behind.

Each running batch has one folder ``grade-batch-*`` in the system's temporary folder holding a lock
file that the batch holds (:mod:`grader.classroom.lock`) for as long as it runs. Every child
grading runs with its TMPDIR inside that folder, so its own scratch is there too. A batch that ends
removes its folder; one that was killed (SIGKILL, a crash, a power cut) cannot, but its lock went
with it, so the next batch sees an unlocked folder and removes it.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from grader.classroom.lock import try_hold

PREFIX = "grade-batch-"
LOCK = "in-use.lock"


class BatchScratch:
    """This batch's scratch folder, locked from the moment it can be found until it is removed."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix=PREFIX)
        fresh = os.path.join(self.path, LOCK + ".new")
        self._fd = try_hold(fresh)
        os.rename(fresh, os.path.join(self.path, LOCK))  # others judge a folder only once it has LOCK, held

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._fd)


def remove_stale(root: str | None = None) -> int:
    """Remove the scratch folders of batches that are gone; returns how many were removed."""
    root = root or tempfile.gettempdir()
    removed = 0
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not name.startswith(PREFIX) or not os.path.isdir(folder):
            continue
        try:
            fd = try_hold(os.path.join(folder, LOCK), create=False)
        except OSError:  # no lock yet (a batch starting up), or not ours to judge
            continue
        if fd is None:
            continue  # a running batch's
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        finally:
            os.close(fd)
    return removed
