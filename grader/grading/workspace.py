"""Where grading runs put the submission for their workers, and what starts those workers.

A workspace is a scratch folder (the submission's copy, the link to the engine) plus the
:class:`grader.workers.launch.Launcher` whose zygote forks the workers. One grading run normally
has its own and closes it at the end. Watch mode keeps one for a whole session so the zygote, which
has imported JAX and never runs student code, stays warm between runs; each run still gets fresh
workers forked from it, and :meth:`Workspace.fresh_copy` empties the folder first, so nothing an
earlier run's code wrote there survives. The path stays the same between runs because workers'
environment names it, and a zygote serves only workers of its own environment.
"""

from __future__ import annotations

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


class Workspace:
    def __init__(self, prefix: str = "grade-"):
        self.root = tempfile.mkdtemp(prefix=prefix)
        self.engine = os.path.join(self.root, "engine")  # holds only the ``grader`` package, for the workers
        self.launcher = Launcher(self.engine, use_zygote(), STARTUP_TIMEOUT_S)

    def fresh_copy(self, source: str) -> str:
        """Empty the folder, then copy the submission at ``source`` into it; returns the copy's path. A zygote
        that died since the last run (a student's code may kill its parent) is replaced."""
        self.launcher.forget_dead()
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        os.makedirs(self.engine)
        os.symlink(ENGINE_DIR, os.path.join(self.engine, "grader"))
        return submissions.copy_to_scratch(source, self.root)

    def close(self) -> None:
        """End the zygotes and remove the folder."""
        try:
            self.launcher.close()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
