"""The end-of-batch summary: how the class did, and every submission that got no score, with why."""

from __future__ import annotations

import statistics

from grader.classroom.gradebook import FAILED, GRADED, REFUSED, Result
from grader.layout import number, plural
from grader.grading.sanitise import line, terminal


def _num(x: float) -> str:
    return number(x, 2)


def summarize(results: list[Result], tasks: list[dict], title: str) -> str:
    """Text for stdout: counts, mean and median score, per-task mean, then refused and failed ones."""
    graded = [r for r in results if r.status == GRADED]
    lines = [f"{title}: {plural(len(results), 'submission')}, {len(graded)} graded, "
             f"{sum(r.status == REFUSED for r in results)} refused, {sum(r.status == FAILED for r in results)} failed"]
    if graded:
        max_score = graded[0].max_score
        scores = [r.score for r in graded]
        lines.append(f"  score   mean {_num(statistics.mean(scores))} / {_num(max_score)}   "
                     f"median {_num(statistics.median(scores))}   min {_num(min(scores))}   max {_num(max(scores))}")
        width = max(len(t["id"]) for t in tasks)
        for t in tasks:
            got = [task["score"] for r in graded for task in r.report["tasks"] if task["id"] == t["id"]]
            if got:
                extra = "  (extra credit)" if t["extra_credit"] else ""
                lines.append(f"  {t['id']:<{width}}  mean {_num(statistics.mean(got))} / {_num(t['points'])}{extra}")
    late = [(r, r.report["late"]) for r in graded if r.report.get("late", {}).get("days_late")]
    if late:
        lines.append("  late (penalty taken off the raw score):")
        width = max(len(line(r.student)) for r, _ in late)
        lines += [f"    {line(r.student):<{width}}  {rec['days_late']} day{'s' if rec['days_late'] != 1 else ''} late  "
                  f"-{_num(rec['penalty_percent'])}%  {_num(rec['raw_score'])} -> {_num(rec['score'])}"
                  for r, rec in late]
    for status, advice in ((REFUSED, "fix the submission and run the batch again"),
                           (FAILED, "run the same command again to retry them")):
        bad = [r for r in results if r.status == status]
        if bad:
            lines.append(f"  {status} ({advice}):")
            width = max(len(line(r.student)) for r in bad)
            lines += [f"    {line(r.student):<{width}}  {line(r.error)}" for r in bad]
    return terminal("\n".join(lines) + "\n")  # student ids are folder names, errors may quote them
