"""Where grading runs put the submission for their workers, and what starts those workers.

A workspace is a scratch folder (the submission's copy, the suite's probes, the link to the engine)
plus the :class:`grader.workers.launch.Launcher` whose zygote forks the workers. One grading run
normally has its own and closes it at the end. Watch mode keeps one for a whole session so the
zygote, which has imported JAX and never runs student code, stays warm between runs; each run still
gets fresh workers forked from it, and :meth:`Workspace.fresh_copy` empties the folder first, so
nothing an earlier run's code wrote there survives. The path stays the same between runs because
workers' environment names it, and a zygote serves only workers of its own environment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from grader import submission as submissions
from grader.workers.launch import Launcher
from grader.workers.worker import STARTUP_TIMEOUT_S

ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
    os.makedirs(probes)
    for name in os.listdir(suite):
        if name.endswith(".py") and not name.startswith("test_") and name != "conftest.py":
            shutil.copyfile(os.path.join(suite, name), os.path.join(probes, name))
    return probes


class Workspace:
    def __init__(self, prefix: str = "grade-"):
        self.root = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.root, 0o711)  # a worker with a uid of its own must reach its folder, and list none
        self.engine = os.path.join(self.root, "engine")  # holds only the ``grader`` package, for the workers
        self.launcher = Launcher(self.engine, use_zygote(), STARTUP_TIMEOUT_S)

    def fresh_copy(self, source: str, suite: str) -> tuple[str, str]:
        """Empty the folder, then copy the submission at ``source`` and the probes of ``suite`` into it;
        returns (the submission's copy, the probes' folder). A zygote that died since the last run (a
        student's code may kill its parent) is replaced."""
        self.launcher.forget_dead()
        _make_removable(self.root)
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        os.makedirs(self.engine)
        os.symlink(ENGINE_DIR, os.path.join(self.engine, "grader"))
        return submissions.copy_to_scratch(source, self.root), _copy_probes(suite, os.path.join(self.root, "probes"))

    def close(self) -> None:
        """End the zygotes and remove the folder."""
        try:
            self.launcher.close()
        finally:
            _make_removable(self.root)
            shutil.rmtree(self.root, ignore_errors=True)
