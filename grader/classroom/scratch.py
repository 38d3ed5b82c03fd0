"""Where a batch keeps copies of students' code while it grades them, and how a later batch finds
what a killed one left behind.

Each running batch has one held folder ``grade-batch-*`` (:mod:`grader.grading.held_folder`) in the
system's temporary folder, locked for as long as the batch runs. Every child grading runs with its
TMPDIR inside that folder, so its own scratch is there too. A batch that ends removes its folder;
one that was killed cannot, but its lock went with it, so the next batch removes it.
"""

from __future__ import annotations

from grader.grading import held_folder

PREFIX = "grade-batch-"


class BatchScratch(held_folder.HeldFolder):
    """This batch's scratch folder."""

    def __init__(self):
        super().__init__(PREFIX)


def remove_stale(root: str | None = None) -> int:
    """Remove the scratch folders of batches that are gone; returns how many were removed."""
    return held_folder.remove_stale(PREFIX, root)
