"""Where a batch keeps copies of students' code while it grades them, and how a later batch finds
what a killed one left behind.

Each running batch has one held folder ``grade-batch-*`` (:mod:`grader.grading.held_folder`) in the
system's temporary folder, locked for as long as the batch runs. Every child grading runs with its
TMPDIR inside that folder, so its own scratch is there too. A batch that ends removes its folder;
one that was killed cannot, but its lock went with it, so the next batch removes it.

The folders on the way to a grading's TMPDIR are mode 0711: a worker with a uid of its own
(grader.sandbox.confine) passes through to its own scratch, and can list none of them, so it
cannot find a classmate's (Landlock keeps it out of those anyway).
"""

from __future__ import annotations

import os

from grader.grading import held_folder

PREFIX = "grade-batch-"
PASSABLE = 0o711  # others may pass through, not list


class BatchScratch(held_folder.HeldFolder):
    """This batch's scratch folder."""

    def __init__(self):
        super().__init__(PREFIX)
        os.chmod(self.path, PASSABLE)

    def job(self, index: int) -> tuple[str, str]:
        """(a new folder for one child grading, its TMPDIR inside it), both passable by a worker's uid."""
        folder = os.path.join(self.path, str(index))
        tmp = os.path.join(folder, "tmp")
        for path in (folder, tmp):
            os.mkdir(path)
            os.chmod(path, PASSABLE)  # whatever the umask
        return folder, tmp


def remove_stale(root: str | None = None) -> int:
    """Remove the scratch folders of batches that are gone; returns how many were removed."""
    return held_folder.remove_stale(PREFIX, root)
