"""The shared compile cache: programs compiled by trusted processes, read by every worker, written by none.

Compiling is most of what a worker does (XLA compiles 5 to 30 programs per task and device count,
most of them JAX's own pads, reshapes and slices at the suite's shapes, the same for every student),
and JAX can keep compiled programs on disk by a hash of the program (its persistent cache). A
compiled program is machine code that a process loads and runs, so who may write the cache decides
whose code runs: here only *trusted* processes do, namely clean workers (which never run student
code: they compile programs handed over as data) and, in ``grade check``, the workers running the
course's own reference solutions and stubs. They write to an outbox of their own
(``RunSettings.outbox``, one folder per worker, a ``kept`` folder of its confinement); once the run's
workers are gone the grader, which never runs student code, moves each well-formed entry into the
shared folder (:func:`publish`). Every worker reads the shared folder by file name only
(grader.sandbox.compile_cache); none may list or write it.

Where it lives (``GRADE_COMPILE_CACHE``: a folder, or ``off``):

- a student's machine, CI and ``grade batch``: ``$XDG_CACHE_HOME/pmap-course/compile-cache``
  (``~/.cache/...``), kept across runs and shared by a batch's jobs;
- Gradescope: the folder ``grade release`` fills by running ``grade check`` with
  ``GRADE_COMPILE_CACHE`` pointing into the autograder bundle, so the image carries the reference
  solutions' programs (the student's workers read them, never list them).

A run with a sandbox mechanism switched off (measuring only) uses no shared cache at all.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil

VARIABLE = "GRADE_COMPILE_CACHE"
ENTRY = re.compile(r"[A-Za-z0-9_.-]{1,200}-[0-9a-f]{64}-cache")  # JAX's name for an entry: <module>-<sha256>-cache
LIMIT_BYTES = 2 << 30  # past this, nothing more is published (each run's new programs are mostly a student's own)
ENTRY_LIMIT_BYTES = 64 << 20  # an entry larger than any program of a course is not published


def default_folder() -> str:
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "pmap-course", "compile-cache")


def shared_folder(sandbox_off=()) -> str:
    """The shared cache's folder, made (mode 0711: workers of another uid may pass, not list) if needed;
    "" when it is off (``GRADE_COMPILE_CACHE=off``, a sandbox mechanism switched off, or no such folder
    can be made)."""
    chosen = os.environ.get(VARIABLE, "")
    if chosen.lower() in ("off", "0") or sandbox_off:
        return ""
    folder = os.path.abspath(chosen or default_folder())
    try:
        os.makedirs(folder, mode=0o711, exist_ok=True)
        os.chmod(folder, 0o711)
    except OSError:
        return ""
    return folder


def _size(folder: str) -> int:
    with os.scandir(folder) as entries:
        return sum(e.stat(follow_symlinks=False).st_size for e in entries if e.is_file(follow_symlinks=False))


def publish(outbox: str, shared: str) -> int:
    """Move every well-formed entry the trusted workers left in ``outbox`` (one folder per worker) into
    ``shared``, whole (a temporary name, then a rename), readable by every uid; returns how many.

    Only regular files named as JAX names an entry and of a sane size are moved; an entry already
    there is kept (its name is the hash of what it holds). Nothing is published past LIMIT_BYTES.
    """
    if not (outbox and shared and os.path.isdir(outbox)):
        return 0
    moved, room = 0, LIMIT_BYTES - _size(shared)
    for folder in sorted(os.listdir(outbox)):
        below = os.path.join(outbox, folder)
        if os.path.islink(below) or not os.path.isdir(below):
            continue
        for name in sorted(os.listdir(below)):
            source, target = os.path.join(below, name), os.path.join(shared, name)
            st = os.lstat(source)
            if (not ENTRY.fullmatch(name) or not os.path.isfile(source) or os.path.islink(source)
                    or st.st_size > min(ENTRY_LIMIT_BYTES, room) or os.path.exists(target)):
                continue
            partial = os.path.join(shared, f".{name}.{os.getpid()}.partial")
            try:
                shutil.copyfile(source, partial, follow_symlinks=False)
                os.chmod(partial, 0o644)
                os.replace(partial, target)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(partial)
                continue
            moved, room = moved + 1, room - st.st_size
    return moved
