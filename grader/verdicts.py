"""What can go wrong with a student's call, in the grader process, and how the report names it.

The worker classifies exceptions of student code; the grader adds what only it can see (time-outs,
deaths, memory). A hidden test that calls the student and gets a failure sees a StudentFailure; if it
does not catch it, the case fails with its message.
"""

from __future__ import annotations

# kind -> task status shown in the report when it is the first failure of a task.
STATUS = {
    "not_started": "not started",
    "import_error": "import error",
    "missing_module": "missing",
    "missing_function": "missing",
    "wrong_signature": "wrong signature",
    "raised": "error",
    "exited": "crashed",
    "bad_return": "wrong type",
    "not_traceable": "not traceable",
    "timeout": "timed out",
    "deadlock": "deadlock",
    "died": "crashed",
    "memory": "memory limit",
    "wrong": "wrong answer",
    "not_run": "not run here",
}


class StudentFailure(Exception):
    """A call into student code did not produce a value. ``kind`` is a key of STATUS."""

    def __init__(self, kind: str, message: str, where: str | None = None, exc_type: str | None = None):
        super().__init__(message)
        self.kind, self.message, self.where, self.exc_type = kind, message, where, exc_type

    def __str__(self) -> str:
        return f"{self.message} ({self.where})" if self.where else self.message


class GraderError(Exception):
    """The grader itself cannot go on (not the student's fault): exit code 3."""


class UsageError(Exception):
    """Bad command line, course or submission path: exit code 2."""
