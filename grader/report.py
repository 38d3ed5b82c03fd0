"""The report of one grading run: a text table for people, JSON (versioned) for programs.

JSON schema ``pmap-course/report`` version 1 is documented in docs/report-schema.md; add fields
freely, but bump SCHEMA_VERSION when one changes meaning or goes away.
"""

from __future__ import annotations

import json
import textwrap

from grader import __version__
from grader.runner import RunResult
from grader.scoring import Score, case_label

SCHEMA = "pmap-course/report"
SCHEMA_VERSION = 1


def _fmt(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def to_dict(run: RunResult, score: Score, course_name: str) -> dict:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "grader_version": __version__,
        "course": course_name,
        "exercise": run.exercise.name,
        "submission": run.submission,
        "seed": run.seed,
        "backend": run.backend,
        "jax_version": run.info.get("jax_version"),
        "platform": run.info.get("platform"),
        "device_kind": run.info.get("device_kind"),
        "score": round(score.total, 4),
        "max_score": score.max_total,
        "percent": round(score.percent, 2),
        "tasks": [
            {
                "id": ts.task.id,
                "title": ts.task.title,
                "score": ts.score,
                "max_score": ts.max_score,
                "extra_credit": ts.task.extra_credit,
                "status": ts.status,
                "reason": ts.reason,
                "hint": ts.task.hint if ts.score < ts.max_score else "",
                "cases": [
                    {
                        "test": c.test,
                        "name": c.nodeid.rpartition("::")[2],
                        "devices": c.devices,
                        "outcome": c.outcome,
                        "kind": c.kind,
                        "message": c.message,
                        "where": c.where,
                        "weight": ts.task.rule(c.test).weight,
                        "visibility": ts.task.rule(c.test).visibility,
                        "duration_s": round(c.duration_s, 4),
                    }
                    for c in ts.cases
                ],
            }
            for ts in score.tasks
        ],
        "timing": {"wall_s": round(run.wall_s, 3), "worker_s": round(run.worker_s, 3)},
        "student_output": run.student_output,
    }


def to_json(run: RunResult, score: Score, course_name: str) -> str:
    return json.dumps(to_dict(run, score, course_name), indent=2) + "\n"


def to_text(run: RunResult, score: Score, course_name: str) -> str:
    width = max([len(ts.task.id) for ts in score.tasks] + [5])
    lines = [f"{course_name} · {run.exercise.name}: {run.exercise.title}", ""]
    for ts in score.tasks:
        pts = f"{_fmt(ts.score):>5} / {_fmt(ts.max_score):<3}"
        extra = " (extra credit)" if ts.task.extra_credit else ""
        cases = f"{ts.passed}/{ts.counted} cases" if ts.cases else ""
        lines.append(f"  {ts.task.id:<{width}}  {pts}  {ts.status:<13} {cases}{extra}")
        indent = " " * (width + 4)
        if ts.reason:
            lines += textwrap.wrap(ts.reason, 100, initial_indent=indent, subsequent_indent=indent + "  ")
        if ts.score < ts.max_score and ts.task.hint:
            lines += textwrap.wrap("hint: " + ts.task.hint, 100, initial_indent=indent, subsequent_indent=indent + "  ")
    lines += ["", f"  {'total':<{width}}  {_fmt(score.total):>5} / {_fmt(score.max_total):<3}  ({score.percent:.0f}%)", ""]
    counts = sorted({c.devices for c in run.cases if c.devices})
    jax = run.info.get("jax_version", "?")
    lines.append(f"seed {run.seed} · backend {run.backend} ({run.info.get('device_kind', 'no worker started')}, "
                 f"jax {jax}) · device counts {', '.join(map(str, counts)) or '-'} · {run.wall_s:.1f} s")
    if run.student_output:
        size = sum(len(v) for v in run.student_output.values())
        lines.append(f"your code printed {size} characters (see --format json for the text)")
    lines.append(f"reproduce: grade {run.exercise.name} --seed {run.seed}")
    return "\n".join(lines) + "\n"
