"""Which submissions a batch grades, under which student ids, and which shard each belongs to.

A path on the command line is a submission (a folder holding the exercise's modules or the
exercise folder, a ``.zip`` / ``.tar.gz`` archive, or a notebook, ``.ipynb``) or a class folder
holding submissions. The student id is the folder's name, or the file's name without its suffix. An id that turns up
twice is kept as one entry with both paths, so the batch can refuse it by name instead of silently
grading whichever came last.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from grader.classroom.unpack import archive_kind, strip_suffix
from grader.errors import UsageError
from grader.notebook.cells import SUFFIX as NOTEBOOK


@dataclass(frozen=True)
class Entry:
    student: str
    paths: tuple[str, ...]


def _is_submission_folder(path: str, exercise: str) -> bool:
    return os.path.isdir(os.path.join(path, exercise)) or any(
        name.endswith(".py") and os.path.isfile(os.path.join(path, name)) for name in os.listdir(path))


def _student_id(path: str) -> str:
    return strip_suffix(os.path.basename(os.path.normpath(os.path.abspath(path)))).removesuffix(NOTEBOOK)


def _expand(path: str, exercise: str) -> list[str]:
    if not os.path.exists(path):
        raise UsageError(f"{path} does not exist (expected a submission folder, a .zip or .tar.gz, or a "
                         "folder holding them)")
    if not os.path.isdir(path) or _is_submission_folder(path, exercise):
        return [path]
    return [os.path.join(path, name) for name in sorted(os.listdir(path)) if not name.startswith(".")]


def discover(paths: list[str], exercise: str) -> list[Entry]:
    """The class: one entry per student id, sorted by id."""
    by_id: dict[str, list[str]] = {}
    for path in paths:
        for sub in _expand(path, exercise):
            by_id.setdefault(_student_id(sub), []).append(os.path.abspath(sub))
    return [Entry(student, tuple(dict.fromkeys(found))) for student, found in sorted(by_id.items())]


def kind(path: str) -> str | None:
    """"folder", "zip", "tar" or "notebook" for something we can grade, None for anything else."""
    if os.path.isdir(path):
        return "folder"
    return "notebook" if path.endswith(NOTEBOOK) else archive_kind(path)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/5"`` -> (2, 5)."""
    if not text:
        return None
    try:
        k, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard takes K/N like 1/4, got {text!r}") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard K/N needs 1 <= K <= N, got {text!r}")
    return k, n


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Whether ``student`` belongs to shard K of N: by a hash of the id, so every machine agrees and a
    student's shard never depends on who else submitted."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest()[:16], 16) % n == k - 1
