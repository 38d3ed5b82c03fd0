"""The report of one grading run: a text table for people, JSON (versioned) for programs.

JSON schema ``pmap-course/report`` version 1 is documented in docs/report-schema.md; add fields
freely, but bump SCHEMA_VERSION when one changes meaning or goes away. ``max_score`` is always the
most this run could award: cases not run here (too few real devices) lower it, ``full_max_score``
and each task's ``points`` keep the rubric's figures, and ``not_run`` says how many cases were left out.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field

from grader import __version__
from grader.grading import github_classroom, gradescope, junit
from grader.grading.confinement import describe
from grader.grading.printed import printed
from grader.grading.runner import RunResult
from grader.grading.scoring import Score
from grader.layout import number, summary
from grader.workers.backends import EMULATED
from grader.grading.sanitise import terminal

SCHEMA = "pmap-course/report"
SCHEMA_VERSION = 1
INTERRUPTED = ("INTERRUPTED: this run was stopped before it finished; tasks not reached score nothing, "
               "so this is not your grade")


def points(x: float) -> str:
    """A score as the report shows it: at most one decimal, none for a whole number."""
    return number(x, 1)


@dataclass
class Report:
    """One graded submission: the run, its score, and ``notes`` (sentences about the run as a whole:
    public tests only, a JAX version drift, where the modules were found)."""

    run: RunResult
    score: Score
    course: str
    notes: list[str] = field(default_factory=list)
    options: tuple[str, ...] = ()  # options the command was given that change the result, for the reproduce line
    show_output: bool = False  # the text report ends with what the student's code printed (--show-output)

    def to_dict(self) -> dict:
        return to_dict(self.run, self.score, self.course, self.notes)

    def to_text(self) -> str:
        return to_text(self.run, self.score, self.course, self.notes, self.options, self.show_output)

    def render(self, fmt: str) -> str:
        """The report as ``fmt``: text for people, json (our schema), gradescope (results.json), junit, or
        classroom (a GitHub Classroom runner's result)."""
        if fmt == "text":
            return self.to_text()
        data = self.to_dict()
        if fmt == "json":
            return json.dumps(data, indent=2) + "\n"
        if fmt == "gradescope":
            return json.dumps(gradescope.results(data), indent=2) + "\n"
        if fmt == "junit":
            return junit.junit_xml([(data["exercise"], data, "")], f"{self.course} {data['exercise']}")
        if fmt == "classroom":
            return github_classroom.encoded(data)
        raise ValueError(f"unknown report format {fmt!r}")


def to_dict(run: RunResult, score: Score, course_name: str, notes=()) -> dict:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "grader_version": __version__,
        "course": course_name,
        "exercise": run.exercise.name,
        "submission": run.submission.given,
        "seed": run.seed,
        "backend": run.backend,
        "jax_version": run.info.get("jax_version"),
        "platform": run.info.get("platform"),
        "device_kind": run.info.get("device_kind"),
        "devices_here": run.devices_here,
        "ran_on": run.placement,
        "score": round(score.total, 4),
        "max_score": round(score.max_total, 4),
        "full_max_score": score.full_max_total,
        "percent": round(score.percent, 2),
        "interrupted": run.interrupted,
        "tasks": [
            {
                "id": ts.task.id,
                "title": ts.task.title,
                "score": ts.score,
                "max_score": ts.max_score,
                "points": ts.task.points,
                "not_run": len(ts.not_run),
                "cut_short": ts.cut_short,
                "extra_credit": ts.task.extra_credit,
                "status": ts.status,
                "reason": ts.reason,
                "other_failures": ts.other_failures,
                "hint": ts.task.hint if ts.score < ts.max_score and not ts.unfinished else "",
                "feedback": _feedback_dict(ts),
                "cases": [
                    {
                        "test": c.test,
                        "name": c.nodeid.rpartition("::")[2],
                        "devices": c.devices,
                        "processes": c.processes,
                        "outcome": c.outcome,
                        "kind": c.kind,
                        "message": c.message,
                        "where": c.where,
                        "error": c.error,
                        "weight": ts.task.rule(c.test).weight,
                        "visibility": ts.task.rule(c.test).visibility,
                        "duration_s": round(c.duration_s, 4),
                        "feedback": c.feedback,
                        "cut_short": c.cut_short,
                    }
                    for c in ts.cases
                ],
            }
            for ts in score.tasks
        ],
        "timing": {"wall_s": round(run.wall_s, 3), "worker_s": round(run.worker_s, 3),
                   "start_s": round(run.start_s, 3), "grader_rss_mb": round(run.grader_rss_mb, 1),
                   "worker_rss_mb": round(run.worker_rss_mb, 1), "confine_ms": round(run.confine_ms, 3)},
        "student_output": run.student_output,
        "notes": list(notes),
        "sandbox": run.sandbox,
    }


def _shown_case(ts):
    """The case whose pictures (grader.suite.feedback) a task shows: the case its report leads with
    (TaskScore.led_by) where that has some, else its first failed case that has some, else its last case
    that has some, else None."""
    if ts.led_by is not None and ts.led_by.feedback:
        return ts.led_by
    with_notes = [c for c in ts.cases if c.feedback]
    failed = [c for c in with_notes if c.outcome == "failed"]
    return failed[0] if failed else (with_notes[-1] if with_notes else None)


def _feedback_dict(ts) -> dict | None:
    case = _shown_case(ts)
    return {"test": case.test, "devices": case.devices, "processes": case.processes, "outcome": case.outcome,
            "items": case.feedback} if case else None


def _feedback_lines(ts, indent: str) -> list[str]:
    """The pictures of the failed case a failing task shows, indented under it."""
    case = _shown_case(ts)
    if case is None or case.outcome != "failed":
        return []
    lines = []
    for note in case.feedback:
        what = f" of {note['what']}" if note.get("what") else ""  # which function: a task may have several
        head = [f"communication{what} ({case.label}):"] if note["kind"] == "communication" else []
        body = ["  " + line for line in note["text"]] if head else note["text"]
        lines += [indent + line for line in head + body]
    return lines


def _machine(run: RunResult) -> str:
    kind = run.info.get("device_kind", "no worker started")
    here = f"{kind}, {run.devices_here} on this machine" if run.devices_here else f"emulated {kind} devices"
    return f"{here}, jax {run.info.get('jax_version', '?')}"


def _ran_on(run: RunResult) -> str:
    """The configurations that ran; under --backend auto with some on the accelerators and some emulated,
    which ran where: "NVIDIA H200, 1 on this machine (1 device) and emulated CPU devices (2, 4, 8 devices)"."""
    places = dict.fromkeys(p["where"] for p in run.placement)
    if len(places) < 2 and not (run.devices_here and EMULATED.describe() in places):  # all emulated, none here
        return summary((c.devices, c.processes) for c in run.cases if c.outcome != "skipped") or "no devices"
    layouts = {where: [(p["devices"], p["processes"]) for p in run.placement if p["where"] == where] for where in places}
    return " and ".join(f"{where} ({summary(ran)})" for where, ran in layouts.items())


def to_text(run: RunResult, score: Score, course_name: str, notes=(), options=(), show_output: bool = False) -> str:
    width = max([len(ts.task.id) for ts in score.tasks] + [5])
    lines = [f"{course_name} · {run.exercise.name}: {run.exercise.title}", ""]
    if run.interrupted:
        lines[1:1] = [INTERRUPTED]
    for ts in score.tasks:
        pts = f"{points(ts.score):>5} / {points(ts.max_score):<3}"
        extra = " (extra credit)" if ts.task.extra_credit else ""
        cases = f"{ts.passed}/{ts.counted} cases" if ts.cases else ""
        if ts.not_run and ts.counted:
            cases += f", {len(ts.not_run)} {ts.not_run[0].message}"
        if ts.cut_short:
            hang = next(c.kind for c in ts.cases if c.cut_short).replace("timeout", "time-out")
            cases += f", {ts.cut_short} cut short after a {hang}"
        lines.append(f"  {ts.task.id:<{width}}  {pts}  {ts.status:<13} {cases}{extra}")
        indent = " " * (width + 4)
        if ts.reason:
            lines += textwrap.wrap(ts.reason, 100, initial_indent=indent, subsequent_indent=indent + "  ")
        for other in ts.other_failures:
            lines += textwrap.wrap("also: " + other, 100, initial_indent=indent, subsequent_indent=indent + "  ")
        if ts.score < ts.max_score and ts.task.hint and not ts.unfinished:
            lines += textwrap.wrap("hint: " + ts.task.hint, 100, initial_indent=indent, subsequent_indent=indent + "  ")
        lines += _feedback_lines(ts, indent)
    percent = f"  ({score.percent:.0f}%)" if score.max_total else ""
    lines += ["", f"  {'total':<{width}}  {score.points_text(points)}{percent}"]
    if score.scaled:
        lines.append(f"  maximum scaled from {points(score.full_max_total)} to {points(score.max_total)}: cases not run "
                     "on this machine count neither for nor against you")
    lines.append("")
    for note in notes:
        lines += textwrap.wrap("note: " + note, 100, subsequent_indent="  ")
    lines.append(f"seed {run.seed} · backend {run.backend} ({_machine(run)}) · ran on {_ran_on(run)} · {run.wall_s:.1f} s")
    if run.student_output and not show_output:
        size = sum(len(v) for v in run.student_output.values())
        lines.append(f"your code printed {size} characters (--show-output shows them)")
    subset = "" if run.exercise.complete else f" --task {','.join(t.id for t in run.exercise.tasks)}"
    devices = f" --devices {','.join(map(str, run.devices))}" if run.devices else ""
    given = "".join(f" {option}" for option in options)
    lines.append(f"reproduce: grade {run.exercise.name} --seed {run.seed}{subset}{devices}{given}")
    if run.sandbox.get("workers"):
        lines.append(f"sandbox: {describe(run.sandbox, why=False)}")
    if run.interrupted:
        lines.append(INTERRUPTED)
    text = terminal("\n".join(lines) + "\n")  # messages hold what the student's code chose to say
    return text + "\n" + printed(run.student_output) if show_output else text
