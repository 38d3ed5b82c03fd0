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


SLURM_ID, SLURM_COUNT, SLURM_MIN = "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"


def _env_int(env, name: str, why: str) -> int:
    value = env.get(name)
    if value is None:
        raise UsageError(f"--shard auto: {name} is not set ({why})")
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"--shard auto: {name} is {value!r}, expected a whole number") from None


def _auto_shard(text: str, env) -> str:
    """``auto`` -> K/N from a Slurm array job; ``auto:INDEX/COUNT`` -> from the variables named (K from 1)."""
    if text == "auto":
        why = "--shard auto reads a Slurm array job; elsewhere name the variables: --shard auto:INDEX_VAR/COUNT_VAR"
        index, count = _env_int(env, SLURM_ID, why), _env_int(env, SLURM_COUNT, why)
        first = _env_int(env, SLURM_MIN, why) if SLURM_MIN in env else 1
        return f"{index - first + 1}/{count}"  # --array=0-3 and --array=1-4 both give shards 1..4
    index_var, slash, count_var = text.removeprefix("auto:").partition("/")
    if not slash or not index_var or not count_var:
        raise UsageError(f"--shard takes K/N, auto, or auto:INDEX_VAR/COUNT_VAR, got {text!r}")
    why = "the variable --shard names"
    return f"{_env_int(env, index_var, why)}/{_env_int(env, count_var, why)}"


def parse_shard(text: str | None, env=None) -> tuple[int, int] | None:
    """``"2/5"`` -> (2, 5); ``auto`` and ``auto:INDEX_VAR/COUNT_VAR`` read K and N from ``env``."""
    if not text:
        return None
    shown = text
    if text.startswith("auto"):
        text = _auto_shard(text, os.environ if env is None else env)
        shown = f"{shown} (= {text})"
    try:
        k, n = (int(p) for p in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard takes K/N like 1/4, got {shown!r}") from None
    if not 1 <= k <= n:
        raise UsageError(f"--shard K/N needs 1 <= K <= N, got {shown!r}")
    return k, n


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Whether ``student`` belongs to shard K of N: by a hash of the id, so every machine agrees and a
    student's shard never depends on who else submitted."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest()[:16], 16) % n == k - 1
