"""Where grading runs put the submission for their workers, and what starts those workers.

A workspace is a scratch folder (the submission's copy, the suite's probes, the clean workers' home,
the link to the engine) plus the :class:`grader.workers.launch.Launcher` whose zygote forks the
workers. One grading run normally has its own and closes it at the end. The folder is a held one
(grader.grading.held_folder): a run that was killed cannot remove it, so the next workspace made
with the same prefix does.

A student's own run of their exercises gives its student workers a compile cache of their own, by a
hash of each program (grader.workers.compile_cache.own_folder; why that is safe to keep:
grader.sandbox.compile_cache), kept across runs and emptied if it ever grows past
COMPILE_CACHE_LIMIT_BYTES. Watch mode keeps one ``warm`` for a whole session: its zygote, which has
imported JAX and never runs student code, stays up between runs, and so do two things that hold no
state of a run:

- that compile cache, or, where the student's own cannot be had, one of the session's own;
- spare workers (grader.workers.spares), forked once a run's workers are all gone, its report is
  drawn and the folders have been emptied (:meth:`Workspace.ready_next`), which wait, without
  student code, for the next run.

Every run still gets fresh workers and a folder emptied of whatever the code of an earlier run
wrote: :meth:`Workspace.fresh_copy` empties it first, unless :meth:`Workspace.ready_next` did so
after the last run and nothing has run since. The folders keep their paths (and, being emptied
rather than replaced, their inodes, which the spares' file rules name), because workers'
environment names them and a zygote serves only workers of its own environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from grader import submission as submissions
from grader.grading import held_folder
from grader.layout import Layout
from grader.workers import compile_cache
from grader.workers.launch import Launcher
from grader.workers.spares import Spares
from grader.workers.worker import STARTUP_TIMEOUT_S, RunSettings

ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBES, CLEAN, ENGINE, COMPILE_CACHE, OUTBOX, REFERENCE = ("probes", "clean", "engine", "compile-cache",
                                                           "compile-outbox", "reference")
COMPILE_CACHE_LIMIT_BYTES = 1 << 30  # past this (a student's code may write there too) the cache starts over


def use_zygote() -> bool:
    """``GRADE_ZYGOTE=0`` starts every worker as a fresh process."""
    return os.environ.get("GRADE_ZYGOTE", "1") != "0"


def _make_removable(folder: str) -> None:
    """Open up every folder below ``folder`` that student code made unreadable (mode 000), so it can go.

    Runs once every worker is gone; links are never followed (chmod would change their target).
    """
    for parent, dirs, _ in os.walk(folder):
        for name in dirs:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)


def _copy_probes(suite: str, probes: str) -> str:
    """The suite's probe modules (every .py but tests and conftest) copied to ``probes``.

    Workers import probes from there: the suite folder itself, with the hidden tests, stays out of
    their reach.
    """
    for name in os.listdir(suite):
        if name.endswith(".py") and not name.startswith("test_") and name != "conftest.py":
            shutil.copyfile(os.path.join(suite, name), os.path.join(probes, name))
    return probes


def _keep_private(folder: str) -> None:
    """Files readable by the grader's uid only: the reference solution's copy. A reference worker, started as
    root, copies it into its private scratch before it drops to a uid of its own (grader.sandbox.mounts; its
    folders stay listable for the check it makes later). Where the grader is root, a student's worker, of
    another uid, cannot read a file of it even where Landlock is missing; where it is not, Landlock alone
    keeps the folder out of its reach (docs/sandbox.md)."""
    for parent, _, files in os.walk(folder):
        os.chmod(parent, 0o755)
        for name in files:
            os.chmod(os.path.join(parent, name), 0o600)


def _size(folder: str) -> int:
    total = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _empty(folder: str) -> None:
    """Remove everything in ``folder`` but the folder itself (a link in it is removed, never followed)."""
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def _give_to_workers(folder: str) -> None:
    """As root, let a worker that is already running (a spare) take what was just copied into ``folder``:
    readable by any uid (one with a private scratch copies it there at its first request, as its own
    uid), and owned by the folder's owner (one without namespaces took the folder itself when it
    confined itself: grader.sandbox.confine)."""
    if os.geteuid() != 0:
        return
    uid = os.stat(folder).st_uid
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(parent, name)
            os.lchown(path, uid, uid)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if name in dirs else 0o644)


class Workspace:
    def __init__(self, prefix: str = "grade-", warm: bool = False, trusted: bool = False, own_cache: str = ""):
        """``own_cache``: the student's own compile cache, for the student's workers of a run of their own
        exercises (grader.workers.compile_cache.own_folder). ``warm``: keep a compile cache (``own_cache``, else
        one in the workspace) and spare workers between runs (watch mode). ``trusted``: the submissions graded
        here are the course's own (``grade check``), so every worker's programs go to the shared compile
        cache (grader.workers.compile_cache), not only the clean workers'."""
        held_folder.remove_stale(prefix)  # what runs that were killed (SIGKILL, a crash) left behind
        self._held = held_folder.HeldFolder(prefix)
        self.root = self._held.path
        os.chmod(self.root, 0o711)  # a worker with a uid of its own must reach its folder, and list none
        self.engine = os.path.join(self.root, ENGINE)  # holds only the ``grader`` package, for the workers
        self.code = os.path.join(self.root, submissions.SCRATCH_FOLDER)
        self.probes, self.clean = os.path.join(self.root, PROBES), os.path.join(self.root, CLEAN)
        self.reference = os.path.join(self.root, REFERENCE)
        self._has_reference = False
        self.compile_cache = own_cache or (os.path.join(self.root, COMPILE_CACHE) if warm else "")
        self.spares = Spares() if warm else None
        self.trusted = trusted
        self.launcher = Launcher(self.engine, use_zygote(), STARTUP_TIMEOUT_S)
        self._emptied = False  # by ready_next, with nothing run since
        self._last_run: tuple[RunSettings, list[Layout], list[Layout]] | None = None

    def _reset(self) -> None:
        """Empty every folder of the workspace (the compile cache only past its limit), keeping the fixed ones."""
        _make_removable(self.root)
        cache = self.compile_cache
        if cache and os.path.isdir(cache) and _size(cache) > COMPILE_CACHE_LIMIT_BYTES:
            _make_removable(cache)  # a student's code may have closed its folder
            shutil.rmtree(cache, ignore_errors=True)
        kept = {self.code, self.probes, self.clean, self.reference}
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if path == cache or name == held_folder.LOCK:
                continue
            if path in kept and os.path.isdir(path) and not os.path.islink(path):
                _empty(path)
            elif os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        for folder in (self.engine, *kept):
            os.makedirs(folder, exist_ok=True)
            os.chmod(folder, 0o755)  # as new: another uid reads the probes (_make_removable closed them)
        if cache:
            os.makedirs(cache, exist_ok=True)
            os.chmod(cache, 0o711)  # every worker's uid passes through to its own folder (_make_removable closed it)
        os.symlink(ENGINE_DIR, os.path.join(self.engine, "grader"))

    def make_ready(self) -> None:
        """Make the folders now (the engine's link too), so a zygote can start before the first run;
        that run's :meth:`fresh_copy` then copies into them without emptying them again."""
        self._reset()
        self._emptied = True

    def fresh_copy(self, source: str, suite: str, reference: str | None = None) -> tuple[str, str]:
        """Empty the folder (unless :meth:`ready_next` just did), then copy the submission at ``source``, the
        probes of ``suite`` and, where the course has it here, its ``reference`` solution (for reference
        workers) into it; returns (the submission's copy, the probes' folder). A zygote that died since the
        last run (a student's code may kill its parent) is replaced."""
        self.launcher.forget_dead()
        if not self._emptied:
            if self.spares is not None:
                self.spares.close()  # they were forked for a folder about to be emptied
            self._reset()
        self._emptied = False
        submissions.copy_to_scratch(source, self.root)
        _copy_probes(suite, self.probes)
        _give_to_workers(self.code)
        self._has_reference = bool(reference) and os.path.isdir(reference)
        if self._has_reference:
            shutil.copytree(reference, self.reference, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", ".*"))
            _keep_private(self.reference)
        return self.code, self.probes

    def settings(self, **run) -> RunSettings:
        """The RunSettings of a run in this workspace (``run``: the rest of its fields)."""
        return RunSettings(code=self.code, probes=self.probes, clean_home=self.clean,
                           compile_cache=self.compile_cache, outbox=os.path.join(self.root, OUTBOX),
                           shared_cache=compile_cache.shared_folder(run.get("sandbox_off", ())), trusted=self.trusted,
                           reference=self.reference if self._has_reference else "", **run)

    def publish(self, run: RunSettings) -> int:
        """Once ``run``'s workers are all gone: move what its trusted workers compiled into the shared
        compile cache (grader.workers.compile_cache.publish), and empty the outbox; returns how many."""
        moved = compile_cache.publish(run.outbox, run.shared_cache)
        if os.path.isdir(run.outbox):
            shutil.rmtree(run.outbox)
        return moved

    def note_run(self, run: RunSettings, layouts: list[Layout], clean: list[Layout]) -> None:
        """Remember a finished run's settings and the layouts it started workers for (``layouts``: the
        student's, ``clean``: clean ones), for :meth:`ready_next`."""
        self._last_run = (run, layouts, clean)

    def ready_next(self) -> None:
        """Once the last run's workers are all gone: in a warm workspace, empty the folders and fork spares
        for a next run like the last one. Watch mode calls it once a round's report is drawn."""
        if self.spares is None or self._last_run is None:
            return
        self.launcher.forget_dead()
        self._reset()
        self._emptied = True
        self.spares.start(self._last_run[0], self.launcher, *self._last_run[1:])

    def close(self) -> None:
        """End the spares and the zygotes, and remove the folder."""
        try:
            if self.spares is not None:
                self.spares.close()
            self.launcher.close()
        finally:
            _make_removable(self.root)
            self._held.remove()
