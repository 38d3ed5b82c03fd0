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
- Gradescope: the same default folder in each submission's container, which starts empty: the image
  cannot run ``grade check`` (it has no solutions), and machine code compiled on the release machine
  is refused by XLA on a processor of other features (docs/sandbox.md, "The shared compile cache").

A run with a sandbox mechanism switched off (measuring only) uses no shared cache at all.

A student's own runs (``grade EXERCISE`` on their own exercises, and watch mode) also keep a cache of
their own workers' programs (:func:`own_folder`), which those workers write: what a student's code
could plant there reaches only that student's later runs of their own exercises, whose reports count
for nothing. No clean worker, no ``--submission``, batch, check or GitHub Classroom run (whose report is
a grade) reads or writes it, and nothing in it is ever published to the shared folder. It is what makes
an edit-and-grade loop compile only what the edit changed: the pads, reshapes and slices at the suite's
shapes, and everything the student did not touch, are found there from the second run on.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile

VARIABLE = "GRADE_COMPILE_CACHE"
OWN_VARIABLE = "GRADE_OWN_COMPILE_CACHE"  # a folder, or off; off too when GRADE_COMPILE_CACHE is off
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
    if _off(chosen) or sandbox_off:
        return ""
    folder = os.path.abspath(chosen or default_folder())
    try:
        os.makedirs(folder, mode=0o711, exist_ok=True)
        os.chmod(folder, 0o711)
    except OSError:
        return ""
    return folder


def _off(value: str) -> bool:
    return value.lower() in ("off", "0")


def own_folder() -> str:
    """The folder of a student's own compile cache (see the module's docstring), made if needed; "" when
    it is off (``GRADE_OWN_COMPILE_CACHE=off``, or ``GRADE_COMPILE_CACHE=off``) or cannot be had.

    By default it is ``pmap-course-own-cache-UID`` in the temporary folder, where every worker's uid can
    pass (a home folder of mode 0700 would keep a worker of another uid out), and it is used only if it
    is a real folder of this user that nobody else may write: another user of the machine could make
    that name first, to have their programs run in this user's workers.
    """
    chosen = os.environ.get(OWN_VARIABLE, "")
    if _off(chosen) or _off(os.environ.get(VARIABLE, "")):
        return ""
    folder = os.path.abspath(chosen or os.path.join(tempfile.gettempdir(), f"pmap-course-own-cache-{os.geteuid()}"))
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return ""
        os.chmod(folder, 0o711)  # a worker of another uid passes to its own folder, and lists none
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
