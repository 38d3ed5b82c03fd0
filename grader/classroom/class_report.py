"""A class report to look at: one self-contained HTML page from a gradebook.

It answers what an instructor asks after a batch: how did the class do (score distribution, overall
and per task), what went wrong most often in each task (failures grouped by test and kind, with how
many students and one example; untouched stubs counted apart, so they do not hide a real failure),
who has no grade and why, who on the roster sent nothing (with ``--roster``), and what each result
was graded with (backend, and the sandbox record where the report has one).

Words are never broken inside: a cell wraps at spaces, after ``,`` and after ``_ / = :`` before a letter
(a ``<wbr>`` there, so a long test name or path can wrap, never a number or a time), wide tables scroll instead of squeezing their columns, and only a
run of letters longer than its column is broken (``overflow-wrap: break-word``). Charts are inline SVG written here: a
histogram is a few rectangles, not worth a plotting library, and the page needs no network or
script. Every text on it goes through grader.grading.sanitise.html (failure messages hold student output).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter

from grader.classroom.classlist import ClassList
from grader.classroom.gradebook import FAILED, GRADED, REFUSED, Gradebook, Result
from grader.layout import number, plural
from grader.grading.sanitise import html

BINS = 10
TOP_REASONS = 5
UNTOUCHED = "not_started"  # the kind of a case whose stub was never filled in
_BREAK_AFTER = re.compile(r"([_/=:](?=[A-Za-z_])|,(?=\S))")  # not inside a number or a time
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
td, th { padding: .25em .5em; text-align: left; vertical-align: top; overflow-wrap: break-word; }
.wide { overflow-x: auto; }
tr:nth-child(even) td { background: #f4f4f4; } th { border-bottom: 2px solid #999; }
.tasks { display: grid; grid-template-columns: repeat(auto-fill, minmax(28em, 1fr)); gap: 0 2em; }
.task { min-width: 0; } .task table { width: 100%; table-layout: fixed; }
.task th:nth-child(1) { width: 30%; } .task th:nth-child(2) { width: 6.5em; } .task th:nth-child(3) { width: 5.5em; }
svg text { font-size: 11px; fill: #333; } svg rect.bar { fill: #3b6ea8; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; } .bad { color: #a40000; }
"""


def _e(value) -> str:
    """Text for the page: sanitised and escaped, with a line-break opportunity after ``_ / , = :``."""
    return _BREAK_AFTER.sub(r"\1<wbr>", html(str(value)))


def _num(x: float) -> str:
    return number(x, 2)


def histogram(fractions: list[float], title: str) -> str:
    """Inline SVG: how many values fall in each tenth of 0..1 (extra credit above 1 counts in the last)."""
    counts = [0] * BINS
    for f in fractions:
        counts[min(max(int(f * BINS), 0), BINS - 1)] += 1
    width, height, bar, top = 360, 150, 32, max(counts, default=0) or 1
    margin = 16  # room above the tallest bar for its count
    full = height + 40 + margin
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" width="{width}" height="{full}" '
             f'viewBox="0 -{margin} {width} {full}" role="img" aria-label="{html(title)}">'
             f"<title>{html(title)}</title>"]
    for i, n in enumerate(counts):
        h = round(height * n / top)
        x = i * (bar + 4)
        label = f"{i * 100 // BINS}-{(i + 1) * 100 // BINS}%: {n}"
        parts.append(f'<rect class="bar" x="{x}" y="{height - h}" width="{bar}" height="{h}" data-count="{n}">'
                     f'<title>{label}</title></rect>')
        parts.append(f'<text x="{x + bar / 2}" y="{height - h - 3}" text-anchor="middle">{n or ""}</text>')
        parts.append(f'<text x="{x + bar / 2}" y="{height + 14}" text-anchor="middle">{i * 100 // BINS}</text>')
    parts.append(f'<text x="0" y="{height + 32}">% of the points</text></svg>')
    return "".join(parts)


def untouched(results: list[Result], task_id: str) -> list[str]:
    """Students whose every failed case of the task is an untouched stub."""
    out = []
    for r in results:
        task = next((t for t in r.report["tasks"] if t["id"] == task_id), None)
        kinds = {c["kind"] for c in task["cases"] if c["outcome"] == "failed"} if task else set()
        if kinds == {UNTOUCHED}:
            out.append(r.student)
    return out


def failure_reasons(results: list[Result], task_id: str) -> list[tuple[str, str, int, str]]:
    """(test, kind, students, an example message) of the task's failed cases, most students first; an
    untouched stub is no failure reason (see :func:`untouched`)."""
    students: dict[tuple[str, str], set[str]] = {}
    example: dict[tuple[str, str], str] = {}
    for r in results:
        task = next((t for t in r.report["tasks"] if t["id"] == task_id), None)
        for case in task["cases"] if task else ():
            if case["outcome"] == "failed" and case["kind"] != UNTOUCHED:
                key = (case["test"], case["kind"])
                students.setdefault(key, set()).add(r.student)
                example.setdefault(key, case["message"])
    ranked = sorted(students, key=lambda k: (-len(students[k]), k))
    return [(test, kind, len(students[(test, kind)]), example[(test, kind)]) for test, kind in ranked[:TOP_REASONS]]


def _sandbox(report: dict | None) -> str:
    """The report's sandbox record in a few words (absent before the grader recorded one)."""
    record = (report or {}).get("sandbox")
    if not isinstance(record, dict):
        return "not recorded"
    held = ", ".join(map(str, record.get("held", ()))) or "none"
    missing = ", ".join(map(str, record.get("missing", {})))
    return f"{held}; not: {missing}" if missing else held


def _table(header: list[str], rows: list[list[str]], css: str) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<div class="wide"><table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _task_section(task: dict, graded: list[Result]) -> str:
    scores = [t["score"] for r in graded for t in r.report["tasks"] if t["id"] == task["id"]]
    fractions = [s / task["points"] if task["points"] else 0.0 for s in scores]
    extra = " (extra credit)" if task["extra_credit"] else ""
    mean = f"mean {_num(statistics.mean(scores))} / {_num(task['points'])}" if scores else "not graded"
    reasons = failure_reasons(graded, task["id"])
    table = _table(["test", "kind", "students", "for example"],
                   [[_e(t), _e(k), f'<span class="num">{n}</span>', _e(m)] for t, k, n, m in reasons],
                   "failures") if reasons else "<p>No failed cases.</p>"
    stubs = untouched(graded, task["id"])
    stubs_note = (f'<p class="untouched">{plural(len(stubs), "student")} left the stub untouched: '
                  f'{_e(", ".join(stubs))}</p>') if stubs else ""
    return (f'<article class="task" id="task-{html(task["id"])}"><h3>{_e(task["id"])}: {_e(task["title"])}{extra}</h3>'
            f"<p>{mean} · {len(scores)} graded</p>{histogram(fractions, task['id'] + ' scores')}"
            f"<h4>Most common failures</h4>{table}{stubs_note}</article>")


def _result_row(r: Result) -> list[str]:
    late = (r.report or {}).get("late") if r.status == GRADED else None
    score = "" if r.status == FAILED else _num(r.score)
    raw = _num(late["raw_score"]) if late else score
    penalty = f"-{_num(late['penalty'])} ({late['days_late']} d late)" if late and late["days_late"] else ""
    status = _e(r.status) if r.status == GRADED else f'<span class="bad">{_e(r.status)}</span>'
    return [_e(r.student), status, f'<span class="num">{raw}</span>', _e(penalty), f'<span class="num">{score}</span>',
            _e((r.report or {}).get("backend", "")), _e(_sandbox(r.report)), _e(r.graded_at[:19])]


def _sent_nothing(results: list[Result], roster: ClassList | None) -> str:
    if roster is None:
        return ""
    have = {r.student for r in results}
    absent = [s for s in roster.students if s.id not in have]
    body = (_table(["student", "name"], [[_e(s.id), _e(s.name)] for s in absent], "sent-nothing") if absent
            else "<p>Everyone on the roster sent something.</p>")
    return (f'<section id="sent-nothing"><h2>Sent nothing ({plural(len(absent), "student")} of '
            f'{len(roster.students)} on the roster)</h2>{body}</section>')


def render(book: Gradebook, roster: ClassList | None = None) -> str:
    """The whole page for ``book``; with ``roster``, also who on it sent nothing."""
    results = book.results()
    graded = [r for r in results if r.status == GRADED]
    counts = Counter(r.status for r in results)
    title = f"{book.meta_value('course')} {book.meta_value('exercise')}: class report"
    max_score = book.meta_value("max_score") or 0
    scores = [r.score for r in graded]
    stats = (f" · mean {_num(statistics.mean(scores))}, median {_num(statistics.median(scores))} "
             f"of {_num(max_score)}") if scores else ""
    overall = histogram([s / max_score if max_score else 0.0 for s in scores], "total scores")
    tasks = "".join(_task_section(t, graded) for t in book.meta_value("tasks"))
    missing = [r for r in results if r.status != GRADED]
    not_graded = (_table(["student", "status", "why"], [[_e(r.student), _e(r.status), _e(r.error)] for r in missing],
                         "not-graded") if missing else "<p>Everyone was graded.</p>")
    every = _table(["student", "status", "raw score", "late penalty", "score", "backend", "sandbox", "graded at (UTC)"],
                   [_result_row(r) for r in results], "results")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html(title)}</title>'
            f"<style>{_STYLE}</style></head><body><h1>{_e(title)}</h1>"
            f'<p class="summary">{plural(len(results), "submission")}: {counts[GRADED]} graded, '
            f"{counts[REFUSED]} refused, "
            f"{counts[FAILED]} failed{stats} · seed {_e(book.meta_value('seed'))} · grader "
            f"{_e(book.meta_value('grader_version'))}</p>"
            f'<section id="distribution"><h2>Score distribution</h2>{overall}</section>'
            f'<section id="tasks"><h2>Tasks</h2><div class="tasks">{tasks}</div></section>'
            f'<section id="not-graded"><h2>Not graded</h2>{not_graded}</section>{_sent_nothing(results, roster)}'
            f'<section id="results"><h2>Every result</h2>{every}</section></body></html>\n')
