"""The grader's side of the sandbox: what a run's workers held, and whether that is enough.

Every worker confines itself (grader.sandbox.confine) and reports a record of the layers that
held and, for the rest, why not. A run's record is the weakest of its workers' (a layer holds only
if it held in every worker), since a report must not claim more than its least confined case had.

``--require-sandbox`` names a level; a run that cannot reach it is refused before any worker
starts (a usage error, exit 2), with a sentence naming each missing layer and why:

- ``none``: grade with whatever this machine allows (the default for ``grade``: a student on their
  own laptop grades their own code);
- ``basic``: the submission cannot read or change anything but its scratch, cannot make system
  calls that reach other processes or bypass the filter, cannot outlive the run, and has resource
  limits: files, syscalls, lifetime, limits (the default for ``grade batch`` and ``grade
  autograde``, which grade other people's code; Linux 5.13 or newer has all of it, as any user);
- ``strict``: every layer, including network and signals (Landlock ABI 6: Linux 6.7) and a uid of
  its own (the grader runs as root). A multi-process task cannot reach it: gloo's processes
  connect to each other's ephemeral TCP ports, which Landlock cannot name in advance.
"""

from __future__ import annotations

import os
import tempfile

from grader.sandbox import confine
from grader.verdicts import UsageError

LEVELS = {
    "none": (),
    "basic": ("files", "syscalls", "lifetime", "limits"),
    "strict": confine.LAYERS,
}
DEFAULT = {"grade": "none", "batch": "basic", "autograde": "basic"}
HELP = ("refuse to grade unless student code is confined at least this much: none, basic (files, syscalls, "
        "lifetime, limits) or strict (every layer; needs root and Linux 6.7)")
SWITCH = "GRADE_SANDBOX"  # "0": leave every mechanism out (for measuring the cost only); else a comma list to leave out


def switched_off(environ=None) -> frozenset[str]:
    """The mechanisms ``GRADE_SANDBOX`` leaves out: "0" all of them, "seccomp,uid" those; unset none."""
    value = (os.environ if environ is None else environ).get(SWITCH, "").strip()
    if not value or value == "1":
        return frozenset()
    if value == "0":
        return frozenset(confine.MECHANISMS)
    off = frozenset(v.strip() for v in value.split(",") if v.strip())
    unknown = off - set(confine.MECHANISMS)
    if unknown:
        raise UsageError(f"{SWITCH}={value}: unknown mechanism(s) {', '.join(sorted(unknown))}; it takes 0, or a "
                         f"comma list of {', '.join(confine.MECHANISMS)}")
    return off


def combine(records: list[dict]) -> dict:
    """The weakest of several workers' records: a layer held only where it held in all of them."""
    if not records:
        return {"held": [], "missing": {}, "workers": 0}
    missing: dict[str, str] = {}
    for record in records:
        for layer, why in record.get("missing", {}).items():
            missing.setdefault(layer, why)
    held = [layer for layer in confine.LAYERS if layer not in missing]
    costs = sorted(r.get("cost_ms", 0.0) for r in records)
    return {"held": held, "missing": {layer: missing[layer] for layer in confine.LAYERS if layer in missing},
            "workers": len(records), "landlock_abi": min(r.get("landlock_abi", 0) for r in records),
            "cost_ms": costs[len(costs) // 2]}


def shortfall(level: str, record: dict) -> dict[str, str]:
    """Layers ``level`` needs that ``record`` lacks, with the reason for each."""
    if level not in LEVELS:
        raise UsageError(f"--require-sandbox takes {', '.join(LEVELS)}, got {level!r}")
    return {layer: record["missing"][layer] for layer in LEVELS[level] if layer in record.get("missing", {})}


class SandboxRefused(UsageError):
    """The machine or the run cannot confine student code as much as --require-sandbox asks."""


def require(level: str, record: dict, what: str = "this machine") -> None:
    """SandboxRefused naming what is missing when ``record`` (a survey or a run's record) is below ``level``."""
    lacking = shortfall(level, record)
    if lacking:
        reasons = "; ".join(f"{layer} ({why})" for layer, why in lacking.items())
        raise SandboxRefused(f"--require-sandbox {level}: {what} cannot confine student code enough; missing: "
                         f"{reasons}. Grade on a machine that has them, or pass --require-sandbox none to grade "
                         "with less.")


def require_here(level: str) -> None:
    """Refuse (SandboxRefused) before any worker starts when this machine cannot reach ``level``."""
    policy = confine.Policy(scratch=os.path.join(tempfile.gettempdir(), "grade-"), off=switched_off())
    require(level, confine.survey(policy))
