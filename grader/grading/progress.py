"""What a grading run is doing, as one live line on a terminal's stderr, and nothing anywhere else.

A whole exercise takes half a minute or more; a student at a terminal should see that the grader
is working and where it is ("dot 5/20 cases"). A CI log or a pipe cannot redraw a line, and a
program reading the output wants only the report, so the line is drawn only when the stream is a
terminal, and erased before the report is printed.
"""

from __future__ import annotations

import time
from collections import Counter

from grader.layout import plural


class RunProgress:
    """``stream``: where to draw (None, or a stream that is not a terminal: draw nothing)."""

    def __init__(self, stream, title: str = "grading"):
        self.stream = stream if stream is not None and stream.isatty() else None
        self.title = title
        self.started = time.monotonic()
        self._planned: Counter[str] = Counter()
        self._done: Counter[str] = Counter()
        self._drawn = False

    def starting(self) -> None:
        self._draw("starting the workers")

    def planned(self, cases_per_task: Counter[str]) -> None:
        self._planned = Counter(cases_per_task)
        self._draw("collected the tests")

    def case_done(self, task_id: str) -> None:
        self._done[task_id] += 1
        tasks_done = sum(self._done[t] >= n for t, n in self._planned.items())
        self._draw(f"{task_id} {self._done[task_id]}/{self._planned[task_id]} cases · "
                   f"{tasks_done} of {plural(len(self._planned), 'task')} done")

    def clear(self) -> None:
        """Erase the line (before the report, an error or "interrupted" is printed)."""
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False

    def _draw(self, what: str) -> None:
        if self.stream is None:
            return
        elapsed = int(time.monotonic() - self.started)
        self.stream.write(f"\r{self.title}: {what} · {elapsed}s\033[K")
        self.stream.flush()
        self._drawn = True
