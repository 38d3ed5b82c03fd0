"""Finding the student's modules and copying them to a scratch folder for the workers.

Submissions arrive messy: the task modules directly, an ``<exercise>/`` folder, a zipped folder
around either (``my_work/<exercise>/<module>.py``), macOS ``__MACOSX`` debris, a virtualenv, files saved
on Windows (CRLF line ends, a byte-order mark, UTF-16). :func:`locate` picks the folder that holds
most of the expected modules; :func:`copy_to_scratch` copies it, skipping debris and rewriting
Python files as plain UTF-8 with LF line ends, so what gets graded is the code the student wrote.
Workers only ever see the scratch copy, so nothing they write reaches the original.
"""

from __future__ import annotations

import codecs
import os
import shutil
from dataclasses import dataclass

from grader.errors import UsageError

MAX_FILES = 200
MAX_BYTES = 16 << 20
MAX_DEPTH = 4
_JUNK_DIRS = {"__MACOSX", "__pycache__", "node_modules"}
_JUNK_FILES = {".DS_Store", "Thumbs.db", "desktop.ini"}


def expected_modules(stubs: str) -> tuple[str, ...]:
    """The module names a submission should have: the ``.py`` files of the exercise's stub folder."""
    if not os.path.isdir(stubs):
        return ()
    return tuple(sorted(n[:-3] for n in os.listdir(stubs) if n.endswith(".py") and not n.startswith(".")))


def stub_sources(stubs: str) -> dict[str, str]:
    """{module: text} of the stub modules: the code every submission was given."""
    out = {}
    for module in expected_modules(stubs):
        with open(os.path.join(stubs, module + ".py"), encoding="utf-8", errors="replace") as f:
            out[module] = f.read()
    return out


def _skipped_dir(path: str, name: str) -> bool:
    """Folders that never hold the student's modules: hidden, caches, macOS debris, virtualenvs."""
    return name.startswith(".") or name in _JUNK_DIRS or os.path.isfile(os.path.join(path, name, "pyvenv.cfg"))


def _folders(path: str):
    """(folder, depth) for ``path`` and its sub-folders worth looking in, shallowest first."""
    for root, dirs, _ in os.walk(path):
        depth = os.path.relpath(root, path).count(os.sep) + (root != path)
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(root, d)) if depth < MAX_DEPTH else []
        yield root, depth


def locate(path: str, exercise: str, modules: tuple[str, ...] = ()) -> str:
    """The folder holding the exercise's modules inside ``path``.

    With ``modules`` (see :func:`expected_modules`), the folder that holds most of them wins; ties go
    to a folder named like the exercise, then to the shallowest. Without them, or when no folder
    holds any, the first folder named like the exercise, else ``path`` itself (the report then names
    the missing modules).
    """
    if not os.path.exists(path):
        raise UsageError(f"submission folder {path} does not exist")
    if not os.path.isdir(path):
        raise UsageError(f"submission {path} is not a folder")
    best, best_key = path, (0, False, 0)
    for folder, depth in _folders(path):
        found = sum(os.path.isfile(os.path.join(folder, m + ".py")) for m in modules)
        named = os.path.basename(folder) == exercise and folder != path
        key = (found, named, -depth)
        if key > best_key:
            best, best_key = folder, key
    return best


@dataclass(frozen=True)
class Submission:
    """A submission as the grader handles it from the command line to the worker: the path it was
    given, the folder holding the exercise's modules (located once), and the modules it should have."""

    given: str
    found: str
    modules: tuple[str, ...]
    exercise: str = ""

    @property
    def note(self) -> str:
        """A sentence for the report when the modules were somewhere else than the top of what was
        given or its ``<exercise>/`` folder (a zip with a folder around them, say)."""
        where = os.path.relpath(self.found, self.given)
        return "" if where in (".", self.exercise) else f"graded the modules found in {where}/"


def find(path: str, exercise: str, stubs: str) -> Submission:
    """The submission at ``path`` for ``exercise``, whose stubs folder names the modules it should have."""
    modules = expected_modules(stubs)
    return Submission(given=os.path.abspath(path), found=locate(path, exercise, modules), modules=modules,
                      exercise=exercise)


def python_source(data: bytes) -> bytes:
    """Python source as UTF-8 without a byte-order mark, with LF line ends.

    Editors on Windows may save with CRLF, a UTF-8 BOM, as UTF-16 (with a BOM) or in cp1252; all
    of them become the same plain text, so line numbers in reports match what the student sees.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("cp1252", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")


def files(source: str) -> list[tuple[str, str]]:
    """(relative path, absolute path) of every file that belongs to a submission, Python files first.

    Links, caches, hidden and virtualenv folders and OS junk are not part of a submission: the same
    list is what gets copied for the workers and what a gradebook hashes.
    """
    found = []
    for root, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(root, d))
        for name in sorted(names):
            src = os.path.join(root, name)
            if os.path.islink(src) or name.endswith(".pyc") or name in _JUNK_FILES or name.startswith("._"):
                continue
            found.append((os.path.relpath(src, source), src))
    return sorted(found, key=lambda item: not item[0].endswith(".py"))


SCRATCH_FOLDER = "submission"  # the copy's folder inside a scratch


def copy_to_scratch(source: str, scratch: str) -> str:
    """Copy a submission folder into ``scratch``: Python files normalised, other files as they are.

    Python files must fit the limits (MAX_FILES files, MAX_BYTES in all); other files (data, notes,
    a stray archive) are copied while they fit and left out after that, since they are not graded.
    """
    dest = os.path.join(scratch, SCRATCH_FOLDER)
    os.makedirs(dest, exist_ok=True)  # a workspace keeps the (emptied) folder between runs
    count = size = 0
    for rel, src in files(source):
        target = os.path.join(dest, rel)
        is_python = rel.endswith(".py")
        file_size = os.path.getsize(src)
        if count + 1 > MAX_FILES or size + file_size > MAX_BYTES:
            if not is_python:
                continue
            raise UsageError(f"submission {source} is too large (more than {MAX_FILES} files or "
                             f"{MAX_BYTES >> 20} MiB of Python)")
        count, size = count + 1, size + file_size
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if is_python:
            with open(src, "rb") as f, open(target, "wb") as out:
                out.write(python_source(f.read()))
        else:
            shutil.copyfile(src, target)
    return dest
