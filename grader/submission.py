"""Finding the student's modules and copying them to a scratch folder for the workers.

A submission folder may be laid out like ``exercises/`` (it holds ``<exercise>/``) or hold the task
modules directly. Workers only ever see the scratch copy, so nothing they write reaches the original.
"""

from __future__ import annotations

import os
import shutil

from grader.verdicts import UsageError

MAX_FILES = 200
MAX_BYTES = 16 << 20


def locate(path: str, exercise: str) -> str:
    """The folder holding the exercise's modules inside ``path``."""
    if not os.path.exists(path):
        raise UsageError(f"submission folder {path} does not exist")
    if not os.path.isdir(path):
        raise UsageError(f"submission {path} is not a folder")
    nested = os.path.join(path, exercise)
    return nested if os.path.isdir(nested) else path


def files(source: str):
    """(relative path, absolute path) of every file that belongs to a submission, in a stable order.

    Hidden folders, ``__pycache__``, ``.pyc`` files and links are not part of a submission: the
    same list is what gets copied for the workers and what a gradebook hashes.
    """
    for root, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(root, name)
            if not os.path.islink(path) and not name.endswith(".pyc"):
                yield os.path.relpath(path, source), path


def copy_to_scratch(source: str, scratch: str) -> str:
    """Copy the Python files (and any data files) of a submission folder into ``scratch``."""
    dest = os.path.join(scratch, "submission")
    os.makedirs(dest)
    count = size = 0
    for rel, src in files(source):
        count += 1
        size += os.path.getsize(src)
        if count > MAX_FILES or size > MAX_BYTES:
            raise UsageError(f"submission {source} is too large (more than {MAX_FILES} files or "
                             f"{MAX_BYTES >> 20} MiB)")
        target = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(src, target)
    return dest
