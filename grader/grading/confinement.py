"""The grader's side of the sandbox: what a run's workers held, and whether that is enough.

Every worker confines itself (grader.sandbox.confine) and reports a record of the layers that
held and, for the rest, why not. A run's record is the weakest of its workers' (a layer holds only
if it held in every worker), since a report must not claim more than its least confined case had.

``--require-sandbox`` names a level; a run that cannot reach it is refused before any worker
starts (a usage error, exit 2), with a sentence naming each missing layer and why:

- ``none``: grade with whatever this machine allows (the default for ``grade``: a student on their
  own laptop grades their own code);
- ``basic``: classmates and the grader are out of reach: the submission reads and writes nothing
  but its scratch (files), names or touches no process outside its own tree (processes), makes no
  system call that bypasses the filter and holds no capability (syscalls), leaves nothing running
  (lifetime), and cannot exhaust what others share: process count, scratch size, file size,
  open files (limits), and shares no IPC object with anyone (ipc). The default for ``grade batch`` and ``grade autograde``, which grade other
  people's code. Any user on Linux 5.13 or newer that allows user namespaces has all of it (6.14
  bounds the process count without a uid of its own: root also gets it through the uid); not a
  container whose seccomp profile refuses namespaces;
- ``strict``: every layer: also network (no socket at all for a single worker; a multi-process
  group's TCP stays in a network namespace of the group's own), a uid of its own (the grader
  runs as root), memory bounded per worker (a memory cgroup, not a per-process limit) and a CPU
  share of its own (a cpu cgroup).

docs/sandbox.md has the table of layers, what each needs, and which level each setup meets.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile

from grader.errors import GraderError, UsageError

BASIC = ("files", "processes", "syscalls", "ipc", "lifetime", "limits")
LEVELS = ("none", "basic", "strict")  # strict: every layer a worker reports (grader.sandbox.confine.LAYERS)
DEFAULT = {"grade": "none", "batch": "basic", "autograde": "basic"}
HELP = ("refuse to grade unless student code is confined at least this much: none, basic (classmates and the "
        "grader out of reach: files, processes, syscalls, ipc, lifetime, limits) or strict (every layer; needs root "
        "or delegated cgroups)")
SWITCH = "GRADE_SANDBOX"  # "0": leave every mechanism out (for measuring the cost only); else a comma list to leave out
SURVEY_TIMEOUT_S = 60.0


def switched_off(environ=None) -> tuple[str, ...]:
    """The mechanisms ``GRADE_SANDBOX`` leaves out: ("all",) for "0", ("seccomp", "uid") for "seccomp,uid", () unset.

    The worker checks the names (grader.sandbox.confine.MECHANISMS); "all" stands for every one.
    """
    value = (os.environ if environ is None else environ).get(SWITCH, "").strip()
    if not value or value == "1":
        return ()
    if value == "0":
        return ("all",)
    return tuple(sorted({v.strip() for v in value.split(",") if v.strip()}))


def combine(records: list[dict]) -> dict:
    """The weakest of several workers' records: a layer held only where it held in all of them.

    Nothing in it varies from run to run on one machine (the cost is in median_cost_ms), so a
    regraded submission's report, and its Gradescope extra_data, stay the same."""
    if not records:
        return {"held": [], "missing": {}, "workers": 0}
    missing: dict[str, str] = {}
    for record in records:
        for layer, why in record.get("missing", {}).items():
            missing.setdefault(layer, why)
    order = [*records[0].get("held", ()), *records[0].get("missing", {})]
    order += [layer for layer in missing if layer not in order]
    return {"held": [layer for layer in order if layer not in missing],
            "missing": {layer: missing[layer] for layer in order if layer in missing},
            "workers": len(records), "landlock_abi": min(r.get("landlock_abi", 0) for r in records),
            "memory_bound": next((r["memory_bound"] for r in records if "memory" in r.get("missing", {})),
                                 records[0].get("memory_bound", "none"))}


def median_cost_ms(records: list[dict]) -> float:
    """How long one worker took to confine itself (the median), for the report's timing."""
    costs = sorted(r.get("cost_ms", 0.0) for r in records)
    return costs[len(costs) // 2] if costs else 0.0


def describe(record: dict, why: bool = True) -> str:
    """One line: ``files, network, ...; not here: uid (why)``; without ``why``, the layers' names alone
    (a student's report, where the reasons would be the same lines on every run)."""
    held = ", ".join(record.get("held", ())) or "none"
    missing = record.get("missing", {})
    if not missing:
        return held
    return f"{held}; not here: {reasons(missing) if why else ', '.join(missing)}"


def shortfall(level: str, record: dict) -> dict[str, str]:
    """Layers ``level`` needs that ``record`` lacks, with the reason for each."""
    if level not in LEVELS:
        raise UsageError(f"--require-sandbox takes {', '.join(LEVELS)}, got {level!r}")
    missing = record.get("missing", {})
    needed = {"none": (), "basic": BASIC, "strict": tuple(missing)}[level]
    return {layer: missing[layer] for layer in needed if layer in missing}


def reasons(lacking: dict[str, str]) -> str:
    """``files (why); uid (why)``: the missing layers of a shortfall, in words."""
    return "; ".join(f"{layer} ({why})" for layer, why in lacking.items())


class SandboxRefused(UsageError):
    """The machine or the run cannot confine student code as much as --require-sandbox asks."""


def require(level: str, record: dict, what: str = "this machine") -> None:
    """SandboxRefused naming what is missing when ``record`` (a survey or a run's record) is below ``level``."""
    lacking = shortfall(level, record)
    if lacking:
        raise SandboxRefused(f"--require-sandbox {level}: {what} cannot confine student code enough; missing: "
                             f"{reasons(lacking)}. Grade on a machine that has them, or pass --require-sandbox none "
                             "to grade with less.")


@functools.lru_cache(maxsize=4)
def survey(off: tuple[str, ...] = ()) -> dict:
    """What a worker could confine on this machine, asked of a fresh Python (the grader never imports the
    worker side); the same record shape as a worker's, nothing applied."""
    engine_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    boot = (f"import sys; sys.path.insert(0, {engine_parent!r}); from grader.sandbox import confine; "
            f"confine.print_survey({os.path.join(tempfile.gettempdir(), 'grade-')!r}, {list(off)!r})")
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", boot], capture_output=True, text=True,
                              timeout=SURVEY_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"})
    except subprocess.TimeoutExpired:
        raise GraderError(f"asking a fresh Python what this machine can confine took over {SURVEY_TIMEOUT_S:g} s") \
            from None
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise GraderError(f"could not ask a fresh Python what this machine can confine (exit code "
                          f"{proc.returncode}):\n{proc.stderr[-2000:]}") from None


def require_here(level: str) -> None:
    """Refuse (SandboxRefused) before any worker starts when this machine cannot reach ``level``."""
    if level != "none":
        require(level, survey(switched_off()))


def here_line() -> str:
    """What `grade check` prints about this machine: the layers a worker would get, and the strictest level it meets."""
    record = survey(switched_off())
    meets = next(level for level in reversed(LEVELS) if not shortfall(level, record))
    return f"sandbox on this machine: {describe(record)} (meets --require-sandbox {meets})"
