"""Progress of a batch on stderr: a redrawn bar on a terminal, one line per submission in a log.

A CI log cannot redraw a line, and a person at a terminal does not want 400 lines, so the form
follows the stream. Both show done / total, submissions that got no score so far and an estimate of the time left.
"""

from __future__ import annotations

import sys
import time

from grader.grading.sanitise import line

BAR_WIDTH = 24


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    def __init__(self, total: int, stream=None):
        self.total, self.done, self.errors = total, 0, 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()

    def eta(self) -> str:
        if not self.done or self.done >= self.total:
            return "-"
        elapsed = time.monotonic() - self.started
        return duration(elapsed / self.done * (self.total - self.done))

    def advance(self, student: str, outcome: str, error: bool) -> None:
        """One more submission finished; ``outcome`` is a few words, ``error`` if it got no score."""
        self.done += 1
        self.errors += error
        student, outcome = line(student), line(outcome)  # a folder's name, an error quoting one: one line each
        counts = f"{self.done}/{self.total} · {self.errors} error{'s' if self.errors != 1 else ''} · ETA {self.eta()}"
        if self.tty:
            filled = BAR_WIDTH * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            end = "\n" if self.done >= self.total else ""
            self.stream.write(f"\r[{bar}] {counts}  {student[:20]}\033[K{end}")
        else:
            self.stream.write(f"[{counts}] {student}: {outcome}\n")
        self.stream.flush()
