"""Grading from inside a notebook: ``from grader import notebook; notebook.check("dot")``.

The notebook's current code is what its kernel last ran: for each module, the latest run of the
code cell marked ``# grade: MODULE`` (see :mod:`grader.notebook.cells`), read from IPython's input
history, so an edited cell counts once it is run again (``path=`` grades a saved notebook instead).
Those cells are written to a temporary folder and graded by ``python -m grader`` in a separate
process: the kernel has run the student's code, so it is no place to make verdicts in, and the
workers are the same confined processes the command line uses. The backend defaults to ``auto``
(a Colab TPU or a machine's GPUs when JAX sees them, else emulated CPU devices). The result shows
as a table: HTML in Jupyter, Colab and VS Code, text anywhere else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from grader.course import COURSE_FILE, Course, find_course
from grader.errors import UsageError
from grader.grading import sanitise
from grader.notebook import cells
from grader.submission import expected_modules


def _history() -> list[str]:
    """The cells this IPython kernel has run, oldest first."""
    try:
        from IPython import get_ipython
    except ImportError:
        shell = None
    else:
        shell = get_ipython()
    if shell is None:
        raise UsageError("notebook.check grades the cells a notebook has run, and this is not a notebook: "
                         "pass path='work.ipynb', or run grade EXERCISE --submission work.ipynb")
    return [source for source in shell.user_ns.get("In", []) if source]


ENGINE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _course(explicit: str | None) -> Course:
    """The course the notebook belongs to: ``course=`` if given, else the one around the folder Jupyter
    runs the notebook in, else the one the grader was installed from (``pip install -e .`` in a course or
    a student bundle), so a notebook saved anywhere still finds it."""
    if explicit:
        return find_course(explicit=explicit)
    try:
        return find_course()
    except UsageError:
        if os.path.isfile(os.path.join(ENGINE_PARENT, COURSE_FILE)):
            return find_course(explicit=ENGINE_PARENT)
        raise UsageError(f"notebook.check cannot find the course: no {COURSE_FILE} in {os.getcwd()} or above, and "
                         "the grader is not installed from a course; pass course='path/to/course', the folder that "
                         f"holds {COURSE_FILE}") from None


def _exercise_of(course: Course, tasks: tuple[str, ...], sources: list[str]) -> str:
    """The one exercise of ``course`` that has every task named, or else every module the cells are marked
    for; a course of one exercise needs no naming."""
    if len(course.exercises) == 1:
        return next(iter(course.exercises))
    marked = {m for m in map(cells.module_of, sources) if m}
    fits = [name for name, ex in course.exercises.items()
            if (set(tasks) <= ex.task_ids if tasks else
                marked and marked <= set(expected_modules(os.path.join(course.root, ex.stubs))))]
    if len(fits) != 1:
        raise UsageError(f"name the exercise: notebook.check(..., exercise=...); this course has "
                         f"{', '.join(course.exercises)}")
    return fits[0]


def check(*tasks: str, exercise: str | None = None, path: str | None = None, devices: str | None = None,
          backend: str = "auto", course: str | None = None, seed: int | None = None) -> Result:
    """Grade this notebook's marked cells (only ``tasks`` if given); returns the report as a table."""
    found_course = _course(course)
    where = os.path.basename(path) if path else "this notebook"
    sources = cells.code_cells(path) if path else _history()
    exercise = exercise or _exercise_of(found_course, tasks, sources)
    expected = expected_modules(os.path.join(found_course.root, found_course.exercise(exercise).stubs))
    found = cells.modules(sources, expected, where, latest_wins=path is None)
    with tempfile.TemporaryDirectory(prefix="grade-notebook-") as folder:
        cells.write(found, folder)
        args = [sys.executable, "-m", "grader", exercise, "--submission", folder, "--format", "json",
                "--backend", backend, "--course", found_course.path]
        args += [a for t in tasks for a in ("--task", t)]
        args += (["--devices", devices] if devices else []) + (["--seed", str(seed)] if seed is not None else [])
        proc = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise UsageError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"grade exited {proc.returncode}")
    report = json.loads(proc.stdout)
    missing = cells.missing_note(found, expected)
    report["notes"] = ([missing] if missing and not tasks else []) + report["notes"]
    return Result(report)


class Result:
    """A JSON report (docs/report-schema.md) that shows itself as a table."""

    def __init__(self, report: dict):
        self.report = report

    def rows(self) -> list[tuple[str, str, str, str]]:
        return [(t["id"], f"{t['score']:g} / {t['max_score']:g}", t["status"], t["reason"]) for t in self.report["tasks"]]

    def _pictures(self) -> list[tuple[str, list[str]]]:
        """(task, lines) of what each failing task's failed case attached (communication, layout)."""
        out = []
        for t in self.report["tasks"]:
            shown = t.get("feedback")
            if shown and shown["outcome"] == "failed":
                out += [(t["id"], note["text"]) for note in shown["items"]]
        return out

    def _footer(self) -> str:
        r = self.report
        return (f"total {r['score']:g} / {r['max_score']:g} ({r['percent']:.0f}%) · seed {r['seed']} · "
                f"backend {r['backend']} ({r['device_kind']})")

    def __repr__(self) -> str:
        rows = [("task", "points", "status", "first failure"), *self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3] for row in rows]
        for task, text in self._pictures():
            lines += [f"{task}:"] + ["  " + line for line in text]
        return sanitise.terminal("\n".join(lines + [*(f"note: {n}" for n in self.report["notes"]), self._footer()]))

    def _repr_html_(self) -> str:
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in ("task", "points", "status", "first failure"))
        body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{sanitise.html(cell)}</td>" for cell in row)
                       + "</tr>" for row in self.rows())
        pictures = "".join(f"<p><b>{sanitise.html(task)}</b></p><pre>{sanitise.html(chr(10).join(text))}</pre>"
                           for task, text in self._pictures())
        notes = "".join(f"<p>note: {sanitise.html(n)}</p>" for n in self.report["notes"])
        return f"<table><tr>{head}</tr>{body}</table>{pictures}{notes}<p>{sanitise.html(self._footer())}</p>"
