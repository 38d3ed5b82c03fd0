"""What can go wrong, on either side of the boundary, and what each failure becomes.

A call into student code that does not produce a value is a :class:`StudentFailure`: the worker
raises it for what it sees (an exception, a missing function), the grader for what only it can see
(time-outs, deaths, memory), and both build it the same way, so one type and one reply format
serve both sides. ``kind`` names the failure; STATUS says how the report shows it when it is the
first failure of a task.

The grader's own failures are GraderError (exit 3) and UsageError (exit 2); :func:`run_safely`
turns them, and anything unexpected, into one line on stderr and an exit code.
"""

from __future__ import annotations

import os
import select
import signal
import sys

EXIT_OK, EXIT_BELOW, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_READER_GONE = 128 + signal.SIGPIPE  # what a shell reports for `cat` when `head` stops reading
REPLY_TEXT_CHARS = 4000  # the most of each text of a worker's failure reply that the grader keeps

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
    "not_exportable": "not one program",
    "timeout": "timed out",
    "deadlock": "deadlock",
    "diverged": "processes disagree",
    "died": "crashed",
    "memory": "memory limit",
    "wrong": "wrong answer",
    "not_run": "not run here",
}


# How a failure names student code it cannot name by function: what a probe of the suite ran (the student
# has never seen a probe), when neither side knows which of the student's functions it was in.
UNNAMED_CALL = "a call into your code"


class StudentFailure(Exception):
    """A call into student code did not produce a value. ``kind`` is a key of STATUS.

    For an exception, ``exc_type`` is its type and ``raised_in`` whose code raised it: "submission"
    (the deepest traceback frame is the student's), "jax" (JAX's own exception type, or its deepest
    frame is inside JAX) or "library" (anywhere else), so a check can tell the student's own error
    from JAX's. ``detail`` is the exception's full text and ``line`` the submission's source line that
    raised: what turns JAX's message into the student's mistake (grader.suite.jax_errors), and what
    the report keeps for instructors.
    """

    OPTIONAL = ("where", "exc_type", "raised_in", "detail", "line")

    def __init__(self, kind: str, message: str, where: str | None = None, exc_type: str | None = None,
                 raised_in: str | None = None, detail: str | None = None, line: str | None = None):
        super().__init__(message)
        self.kind, self.message, self.where, self.exc_type = kind, message, where, exc_type
        self.raised_in, self.detail, self.line = raised_in, detail, line

    def __str__(self) -> str:
        return f"{self.message} ({self.where})" if self.where else self.message

    def reworded(self, message: str, kind: str | None = None) -> StudentFailure:
        """The same failure told with another message (e.g. naming the process it happened on), and kind."""
        return StudentFailure(kind or self.kind, message, **{name: getattr(self, name) for name in self.OPTIONAL})

    def as_reply(self) -> dict:
        """The failure as the worker's reply header (see :func:`from_reply`)."""
        return {"ok": False, "kind": self.kind, "message": self.message,
                **{name: getattr(self, name) for name in self.OPTIONAL}}

    @classmethod
    def from_reply(cls, header: dict) -> StudentFailure:
        """The failure a worker's reply describes. Student code can write that reply itself, so every text
        is cut to REPLY_TEXT_CHARS (and made valid Unicode) and an unknown kind becomes "raised"."""
        kind = header.get("kind")
        return cls(kind if isinstance(kind, str) and kind in STATUS else "raised", _cut(header.get("message", "failed")),
                   **{name: _cut(header[name]) if header.get(name) is not None else None for name in cls.OPTIONAL})


def _cut(value) -> str:
    text = str(value).encode("utf-8", "replace").decode("utf-8")  # a lone surrogate from JSON becomes "?"
    if len(text) <= REPLY_TEXT_CHARS:
        return text
    return text[:REPLY_TEXT_CHARS] + f" [... {len(text) - REPLY_TEXT_CHARS} more characters cut]"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a grading run after its workers were killed and its scratch removed.

    ``partial`` holds what was graded before the stop (a RunResult, or a Report once scored) for a
    caller that wants to show it marked as interrupted; any other caller lets it end the program
    like Ctrl-C (exit 130).
    """

    def __init__(self, partial):
        super().__init__("interrupted")
        self.partial = partial


class GraderError(Exception):
    """The grader itself cannot go on (not the student's fault): exit code 3."""


class UsageError(Exception):
    """Bad command line, course or submission path: exit code 2."""


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more (``grade list | head -1`` once head has exited)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    poll = select.poll()
    poll.register(fd, 0)  # POLLERR is reported whatever is asked: a pipe's write end gets it without readers
    return any(events & select.POLLERR for _, events in poll.poll(0))


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def run_safely(fn, *args, passthrough: tuple[type[BaseException], ...] = (), say=_say, **kwargs):
    """Call ``fn``, turning the engine's errors into one line on stderr (written by ``say``) and their exit code.

    Exceptions in ``passthrough`` (the command-line library's own) propagate unchanged. A message may
    quote a worker's output, so the command line passes a ``say`` that makes it safe for a terminal. A reader
    that stops reading the output (a pipe into ``head``) is not the grader's failure: the command
    ends quietly with the status a shell gives any program stopped that way.
    """
    try:
        result = fn(*args, **kwargs)
        sys.stdout.flush()  # here, where a closed pipe is handled, not at the interpreter's exit
        return result
    except passthrough:
        raise
    except UsageError as exc:
        say(f"error: {exc}")
        sys.exit(EXIT_USAGE)
    except GraderError as exc:
        say(f"grader error: {exc}")
        sys.exit(EXIT_INTERNAL)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if isinstance(exc, BrokenPipeError) and _reader_gone():
            _quiet_stdout()
            sys.exit(EXIT_READER_GONE)
        if os.environ.get("GRADE_DEBUG"):
            raise
        say(f"grader error: internal failure ({type(exc).__name__}: {exc}); "
             "rerun with GRADE_DEBUG=1 for the traceback")
        sys.exit(EXIT_INTERNAL)
