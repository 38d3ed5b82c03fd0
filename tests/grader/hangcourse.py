"""A small course for the tests of hangs and interrupts: a task that passes, one whose student code
never returns, and one after it, all plain Python (no JAX in the student code), so grading is quick.

Test files run in name order, so a run reaches ``test_a_fine.py`` (task fine), then
``test_b_spin.py`` (spin: three tests, each calling the endless loop), then ``test_c_tail.py``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from toycourse import EXERCISE, write_course

REACHED = "spin-was-called"  # the endless spin leaves this file in its worker's scratch: fine is graded
TASKS = [
    {"id": "fine", "title": "Add", "points": 5, "hint": "Return x + y.", "files": ["test_a_fine.py"]},
    {"id": "spin", "title": "Count up", "points": 10, "hint": "Step i on every turn of the loop.",
     "files": ["test_b_spin.py"]},
    {"id": "tail", "title": "Negate", "points": 5, "hint": "Return -x.", "files": ["test_c_tail.py"]},
]
SUITE = {
    "test_a_fine.py": """
        from grader.suite import expect_close


        def test_add(student):
            expect_close(student.call("fine.add", 2.0, 3.0), 5.0, what="add(2, 3)")
        """,
    "test_b_spin.py": """
        from grader.suite import expect_close


        def test_count_3(student):
            expect_close(student.call("spin.count", 3), 3.0, what="count(3)")


        def test_count_5(student):
            expect_close(student.call("spin.count", 5), 5.0, what="count(5)")


        def test_count_0(student):
            expect_close(student.call("spin.count", 0), 0.0, what="count(0)")
        """,
    "test_c_tail.py": """
        from grader.suite import expect_close


        def test_negate(student):
            expect_close(student.call("tail.negate", 2.0), -2.0, what="negate(2)")
        """,
}
SOLUTIONS = {
    "fine.py": "def add(x, y):\n    return x + y\n",
    "spin.py": "def count(n):\n    i = 0\n    while i < n:\n        i += 1\n    return float(i)\n",
    "tail.py": "def negate(x):\n    return -x\n",
}
# The mistake of issue 13: the loop never steps i, so count(n > 0) never returns. It leaves a marker first.
ENDLESS = {**SOLUTIONS, "spin.py": f"def count(n):\n    open({REACHED!r}, 'w').close()\n    i = 0\n"
                                   "    while i < n:\n        pass\n    return float(i)\n"}


def make_course(root: Path, timeout_s: float, local_timeout_s: float | None = None, devices=(1,)) -> Path:
    """The course under ``root``; its exercises/ folder holds the endless loop (the student's own code)."""
    defaults = {"devices": list(devices), "timeout_s": timeout_s}
    if local_timeout_s is not None:
        defaults["local_timeout_s"] = local_timeout_s
    course = {"course": "hang-course", "defaults": defaults,
              "exercises": {EXERCISE: {"title": "Hangs", "tasks": TASKS}}}
    return write_course(root, course, SUITE, SOLUTIONS, ENDLESS)


def _under(folder: Path) -> list[tuple[str, str, bytes]]:
    """(pid, cwd, command line) of the processes whose cwd or command line is under ``folder``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if cwd.startswith(str(folder)) or str(folder).encode() in cmdline:
            found.append((pid, cwd, cmdline))
    return found


def processes_under(folder: Path) -> list[str]:
    """Processes whose cwd or command line is under ``folder`` (a run's TMPDIR): workers, zygotes, graders."""
    return [f"{pid} cwd={cwd} cmd={cmdline[:120]!r}" for pid, cwd, cmdline in _under(folder)]


def under_way(tmp: Path):
    """A condition: the run whose TMPDIR is ``tmp`` is in the endless loop of spin (task fine is graded).

    The spin leaves REACHED in its worker's scratch, which is private to the worker (its own mount
    namespace): it is looked for through each worker's /proc/PID/cwd, which opens the worker's view."""
    def reached() -> bool:
        return any(os.path.exists(f"/proc/{pid}/cwd/{REACHED}") for pid, _, _ in _under(tmp))
    return reached


def wait_for(condition, timeout: float = 120.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
