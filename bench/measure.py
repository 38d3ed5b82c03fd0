"""Running ``grade`` as a measured process, for the benchmark scripts in bench/.

Wall time is measured around the whole ``grade`` process (start to exit); the floor is what its
JSON report says the workers spent on student calls (``timing.worker_s``). Both bench/bench.py and
bench/accelerator_check.py measure this way, so their figures can be compared.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRADE = [sys.executable, "-m", "grader"]
INTERRUPT_GRACE_S = 15.0  # after a time limit: how long grade gets to stop its workers before it is killed


class GradeFailed(Exception):
    """A ``grade`` process exited with an error, or ran past its time limit."""


class GradeTimedOut(GradeFailed):
    """A ``grade`` process ran past its time limit and was stopped."""


def timed(args: list[str], env: dict[str, str] | None = None,
          timeout_s: float | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Run ``args`` in the repository root; its wall time and its captured output.

    Past ``timeout_s`` the process gets SIGINT (grade then stops its workers, which live in their
    own sessions) and, if it is still there after a grace period, SIGKILL; then TimeoutExpired.
    """
    began = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise subprocess.TimeoutExpired(args, timeout_s) from None
    return time.perf_counter() - began, subprocess.CompletedProcess(args, proc.returncode, out, err)


def grade_report(submission: Path | str, extra: list[str], seed: int, env: dict[str, str] | None = None, *,
                 grade: list[str] = GRADE, timeout_s: float | None = None) -> tuple[float, dict]:
    """One ``grade exercise7`` process: its wall time and its JSON report; GradeFailed if it failed."""
    args = [*grade, "exercise7", "--submission", str(submission), "--format", "json", "--seed", str(seed), *extra]
    try:
        wall, proc = timed(args, env, timeout_s)
    except subprocess.TimeoutExpired:
        raise GradeTimedOut(f"{' '.join(args)} ran past its time limit of {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        raise GradeFailed(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return wall, json.loads(proc.stdout)


def floor_figures(wall_s: float, report: dict) -> dict:
    """The figures of one run that wall / floor comparisons need: wall time, score and the report's timing."""
    return {"wall_s": wall_s, "score": report["score"], "max_score": report["max_score"],
            **{f"report_{k}": v for k, v in report["timing"].items()}}


def descendants(pid: int) -> list[int]:
    """``pid``'s child processes, their children, and so on (Linux: /proc/PID/task/TID/children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in os.listdir(f"/proc/{parent}/task") if os.path.isdir(f"/proc/{parent}/task") else ():
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def pss_mb(pid: int) -> float:
    """A process's proportional set size (smaps_rollup ``Pss``): its private pages plus its share of the
    pages it shares, so that the figures of processes forked from one parent add up to what they hold."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("Pss:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def git_commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def align(rows: list[tuple[str, str, str]]) -> str:
    """Rows of three columns as a plain-text table; the first row is the header."""
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{a:<{width[0]}}  {b:<{width[1]}}  {c}".rstrip() for a, b, c in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
