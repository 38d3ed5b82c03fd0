"""The course must leave a grading run as it entered it: course.yaml and the suite folder are hashed before and after.

The sandbox keeps student code away from the course. Where a machine lacks it, or should it ever
fail, a submission that rewrote a test, course.yaml or planted a bytecode cache beside the suite
would change this and every later grading. Hashing every file of the suite folder (caches
included) and course.yaml before the first worker starts and after the last one is gone turns
that into a grader error (exit 3), never a score.
"""

from __future__ import annotations

import hashlib
import os

from grader.errors import GraderError


def snapshot(paths: list[str]) -> dict[str, str]:
    """sha256 of every file under ``paths`` (files or folders), by path; links by their target."""
    found = {}
    for top in paths:
        walk = [(os.path.dirname(top), [], [os.path.basename(top)])] if os.path.isfile(top) else os.walk(top)
        for folder, _, names in walk:
            for name in names:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    found[path] = "link:" + os.readlink(path)
                    continue
                with open(path, "rb") as f:
                    found[path] = hashlib.sha256(f.read()).hexdigest()
    return found


def verify(before: dict[str, str], paths: list[str]) -> None:
    """GraderError naming what changed under ``paths`` since ``before`` was taken."""
    after = snapshot(paths)
    changed = sorted(p for p in before.keys() & after.keys() if before[p] != after[p])
    added, removed = sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys())
    if changed or added or removed:
        parts = [f"{label}: {', '.join(items[:5])}{' ...' if len(items) > 5 else ''}"
                 for label, items in (("changed", changed), ("added", added), ("removed", removed)) if items]
        raise GraderError("the course changed while it was being graded (" + "; ".join(parts) + "); this run's "
                          "scores are void. Restore the course (e.g. git checkout) and grade again.")
