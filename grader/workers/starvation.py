"""Whether a call's time limit fired because of the student's code or because the machine kept the worker from running.

The per-call limit is wall time. A submission in an endless loop uses the CPU it is given; a worker
that a busy machine (a classmate's worker, another job) or a stopped process kept off the CPU did not
get to run at all, and its limit firing says nothing about the student's code. So the grader reads,
when it sends a request and when the limit fires, what the worker's processes did meanwhile (from
/proc, for every process under the worker's holder and each of its threads):

- the CPU time they used (utime + stime, and that of children they collected);
- the time their threads were ready to run but waited for a CPU (``run_delay`` of
  /proc/PID/task/TID/schedstat: a CPU share or quota spent, a machine with more work than cores);
- whether the worker was stopped from outside: a process the student's code cannot stop (state T) is the
  holder's own child that is the init of the worker's pid namespace, which ignores every signal sent from
  inside (a student's SIGSTOP to its own processes is its own doing, and a limit that then fires is its own;
  without namespaces nothing the student cannot stop runs under the holder, so no stop counts).

Finding the worker's processes means reading all of /proc, so a call is only watched once it has run a
quarter of its limit (WATCH_AFTER): most calls end long before, at no cost; the rest are judged by
the last three quarters of their limit.

The limit is the student's when the worker used a fair part of it (STARVED_CPU_SHARE) or, using
little, was not kept from running (it slept, or waited on a lock or a collective: its own doing; a
sleeper woken a hundred times a second waits a little for the CPU each time, which adds up to far less
than STARVED_WAIT_SHARE of the time). The machine starved it when it used little and waited for a CPU
most of the time, or was stopped; the caller then retries the call once in a fresh worker, then
reports the environment's fault (grader.workers.worker), never "an endless loop".

A multi-process group (grader.workers.group) is judged the same way, as one worker: the CPU time and the waits of
all its processes together, against the wall time of the call, and stopped when any of its namespaces' inits is.
A group whose one process loops while the others wait for it in a collective used a fair part of its limit: the
student's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from grader import processes

WATCH_AFTER = 0.25  # the share of a call's limit after which the grader starts watching what the worker gets
STARVED_CPU_SHARE = 0.25  # below this share of the limit in CPU time, the worker did not run enough to be blamed
STARVED_WAIT_SHARE = 0.5  # ... and when its threads waited for a CPU this share of the time, it was kept from running
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Usage:
    """What a worker's processes had used up to one moment: CPU seconds and seconds spent waiting for a CPU, by pid
    (so that a process that started meanwhile counts from zero), and whether one of them was stopped."""

    cpu_s: dict[int, float]
    wait_s: dict[int, float]
    stopped: bool = False


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _namespace_init(pid: int) -> bool:
    """Whether ``pid`` is the init of a pid namespace of its own (its last NSpid is 1): without namespaces the
    holder's children are whatever the student started, which its own code can stop."""
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith("NSpid:"):
            ids = line.split()[1:]
            return len(ids) > 1 and ids[-1] == "1"
    return False


def sample(*holders: int) -> Usage:
    """The usage of each of ``holders`` (a worker's, or each process's of a group) and every process under it (the
    worker, its namespace's init, what it started; without namespaces the holder is the worker itself); stopped only
    where a holder's own child is (see the module's docstring)."""
    cpu, wait, stopped = {}, {}, False
    for holder, pid in ((holder, pid) for holder in holders for pid in (holder, *processes.descendants(holder))):
        stat = _read(f"/proc/{pid}/stat").rsplit(")", 1)
        if len(stat) != 2:
            continue  # it ended meanwhile
        fields = stat[1].split()
        stopped = stopped or (fields[0] in ("T", "t") and fields[1] == str(holder) and _namespace_init(pid))
        cpu[pid] = sum(int(v) for v in fields[11:15]) / _TICK  # utime stime cutime cstime
        tasks = f"/proc/{pid}/task"
        wait[pid] = sum(int((_read(f"{tasks}/{tid}/schedstat").split() or ["0", "0"])[1])
                        for tid in (os.listdir(tasks) if os.path.isdir(tasks) else ())) / 1e9
    return Usage(cpu, wait, stopped)


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(max(0.0, value - before.get(pid, 0.0)) for pid, value in after.items())


def starved(before: Usage, after: Usage, window_s: float, who: str = "the worker") -> str:
    """"" when a limit that fired ``window_s`` seconds after ``before`` (``after``: when it fired) is the student's;
    else why the machine is to blame, in words that name ``who`` ran ("the worker", "the group")."""
    cpu, wait = _spent(before.cpu_s, after.cpu_s), _spent(before.wait_s, after.wait_s)
    if cpu >= STARVED_CPU_SHARE * window_s:
        return ""
    if after.stopped:
        return f"{who} was stopped (it used {cpu:.2f} s of CPU in its last {window_s:.1f} s)"
    if wait >= STARVED_WAIT_SHARE * window_s:
        return (f"the machine kept {who} from running (it used {cpu:.2f} s of CPU in its last {window_s:.1f} s "
                f"and waited {wait:.2f} s for one)")
    return ""
