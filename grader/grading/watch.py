"""``grade EXERCISE --watch``: grade, then regrade every time a file of the submission is saved.

The loop a student lives in is edit, save, read the verdict. Here a save is enough: the folder is
polled (a few stat calls every POLL_S, for a handful of files, is cheaper and more portable than a
file-watching library), and a change is graded once the files have been still for QUIET_S, since
editors save in bursts (a temporary file, a rename, a second write). Each round clears the screen,
draws the report, and says which file was saved and which tasks changed since the round before.

Between rounds the :class:`grader.grading.workspace.Workspace` is kept ``warm``: its zygote has
imported JAX and never runs student code, the student's workers keep a compile cache (an entry is a
program JAX compiled, found by a hash of that program: it is only ever reused for the same one), and
once a round is over the next round's workers are forked and warmed up, with no student code in
them. Every round still gets those fresh workers and a copy of the submission in an emptied folder,
so no state of an earlier round (a module global, a file the code wrote) reaches the next. Ctrl-C
stops the session: whatever round is running is abandoned, every worker and the zygote end, and
``grade`` exits with 130.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from grader import submission as submissions
from grader.errors import GraderError, UsageError
from grader.grading.report import Report, points
from grader.grading.workspace import Workspace
from grader.layout import plural

POLL_S = 0.02
QUIET_S = 0.05
CLEAR = "\x1b[H\x1b[2J"

Snapshot = dict[str, tuple[int, int]]


def snapshot(watched: str) -> Snapshot:
    """(mtime in ns, size) of the file ``watched`` (a notebook), or of every file of the submission in
    the folder ``watched`` (as submission.files lists them)."""
    listed = [(os.path.basename(watched), watched)] if os.path.isfile(watched) else submissions.files(watched)
    found = {}
    for rel, path in listed:
        try:
            st = os.stat(path)
        except OSError:  # deleted between the listing and the stat: it counts as gone
            continue
        found[rel] = (st.st_mtime_ns, st.st_size)
    return found


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def wait_for_change(watched: str, before: Snapshot, poll_s: float = POLL_S, quiet_s: float = QUIET_S) -> Snapshot:
    """Block until the files of ``watched`` differ from ``before`` and have then been still for ``quiet_s``."""
    now = before
    while now == before:
        time.sleep(poll_s)
        now = snapshot(watched)
    still_since = time.monotonic()
    while time.monotonic() - still_since < quiet_s:
        time.sleep(poll_s)
        later = snapshot(watched)
        if later != now:
            now, still_since = later, time.monotonic()
    return now


def _points(report: Report) -> dict[str, tuple[float, str]]:
    return {ts.task.id: (ts.score, ts.status) for ts in report.score.tasks}


def task_changes(before: Report | None, after: Report) -> str:
    """One line naming each task whose score or status moved since the last round."""
    if before is None:
        return ""
    old, new = _points(before), _points(after)
    moved = [f"{task} {points(old[task][0])} -> {points(score)} ({old[task][1]} -> {status})" if old[task][1] != status
             else f"{task} {points(old[task][0])} -> {points(score)}"
             for task, (score, status) in new.items() if task in old and old[task] != (score, status)]
    return "changed: " + "; ".join(moved) if moved else "no task changed"


class _Interrupts:
    """Remembers a Ctrl-C even if code below (pytest) catches the KeyboardInterrupt it raises."""

    def __init__(self):
        self.seen = threading.Event()

    def _handler(self, signum, frame):
        self.seen.set()
        signal.default_int_handler(signum, frame)

    def __enter__(self):
        self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        signal.signal(signal.SIGINT, self._previous)

    def check(self) -> None:
        if self.seen.is_set():
            raise KeyboardInterrupt


def watch(grade: Callable[[Workspace], Report], render: Callable[[Report], str], watched: str,
          out=None, poll_s: float = POLL_S, quiet_s: float = QUIET_S, own_cache: str = "") -> None:
    """Grade with ``grade(workspace)`` now and after every save of ``watched`` (the submission's folder,
    or a notebook), writing ``render(report)`` to ``out``; returns only by KeyboardInterrupt (Ctrl-C),
    after ending every process it started. ``own_cache``: the student's own compile cache, where the
    student watches their own exercises (grader.grading.workspace)."""
    out = out or sys.stdout
    clear = CLEAR if out.isatty() else "\n"
    where = os.path.relpath(watched) if not os.path.relpath(watched).startswith("..") else watched
    workspace = Workspace(prefix="grade-watch-", warm=True, own_cache=own_cache)
    previous, saved = None, ""
    try:
        with _Interrupts() as interrupts:
            while True:
                files = snapshot(watched)
                started = time.perf_counter()
                try:
                    report = grade(workspace)
                    interrupts.check()
                    body, changes = render(report), task_changes(previous, report)
                    previous = report
                except (UsageError, GraderError) as exc:
                    interrupts.check()
                    body, changes = f"error: {exc}\n", ""
                took = f"graded in {time.perf_counter() - started:.1f} s"
                heading = f"saved {saved} · {took}" if saved else took
                lines = [heading, body.rstrip("\n")] + ([changes] if changes else [])
                lines.append(f"watching {where} ({plural(len(files), 'file')}): save to regrade, Ctrl-C to stop")
                out.write(clear + "\n".join(lines) + "\n")
                out.flush()
                workspace.ready_next()
                after = wait_for_change(watched, files, poll_s, quiet_s)
                saved = ", ".join(changed_files(files, after))
    finally:
        workspace.close()
