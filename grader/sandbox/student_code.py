"""Importing and calling the student's code inside the worker, and naming what went wrong.

Every failure of student code becomes a :class:`grader.errors.StudentFailure` whose ``kind`` the
report can explain in one sentence: a missing file, a SyntaxError with file:line, a missing
function, a signature that cannot take the test's arguments, an exception (with the deepest frame
inside the submission), ``sys.exit``, running out of memory.
"""

from __future__ import annotations

import linecache
import os
import sys
import traceback

from grader.errors import StudentFailure
from grader.layout import plural

_submission = ""  # the scratch copy of the submission this worker grades (see use_submission)
_handed_out: list[str] = []  # the student functions student_function gave out in the current request


def use_submission(path: str) -> None:
    """Make ``path`` the folder student modules are imported from (after JAX and NumPy, so a
    student's numpy.py shadows nothing)."""
    global _submission
    _submission = os.path.abspath(path)
    sys.path.insert(0, _submission)


DETAIL_LIMIT = 2000  # characters of an exception's text kept for explaining it and for instructors


def _in_submission(path: str) -> bool:
    return bool(_submission) and path.startswith(_submission + os.sep)


def _frames(tb) -> list[tuple[str, int]]:
    return [(os.path.abspath(frame.f_code.co_filename), lineno) for frame, lineno in traceback.walk_tb(tb)]


def _deepest_student_frame(tb) -> tuple[str, int] | None:
    return next((f for f in reversed(_frames(tb)) if _in_submission(f[0])), None)


def student_frame(tb) -> str | None:
    """file:line of the deepest traceback frame inside the submission, as a relative path."""
    frame = _deepest_student_frame(tb)
    return f"{os.path.relpath(frame[0], _submission)}:{frame[1]}" if frame else None


def _jax_folders() -> tuple[str, ...]:
    modules = (sys.modules.get(name) for name in ("jax", "jaxlib"))
    return tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in modules if getattr(m, "__file__", None))


def raised_in(exc: BaseException) -> str:
    """Whose code raised ``exc``: "jax" (JAX's own exception type, or its deepest frame is inside JAX),
    "submission" (the deepest frame is the student's) or "library" (anywhere else)."""
    frames = _frames(exc.__traceback__)
    deepest = frames[-1][0] if frames else ""
    if type(exc).__module__.partition(".")[0] in ("jax", "jaxlib") or (deepest and deepest.startswith(_jax_folders())):
        return "jax"
    return "submission" if _in_submission(deepest) else "library"


def exception_facts(exc: BaseException) -> dict:
    """What a StudentFailure records of an exception besides its message (see grader.errors)."""
    frame = _deepest_student_frame(exc.__traceback__)
    return {"where": student_frame(exc.__traceback__), "exc_type": type(exc).__name__, "raised_in": raised_in(exc),
            "detail": str(exc)[:DETAIL_LIMIT], "line": first_line(linecache.getline(*frame)) if frame else None}


def first_line(text, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def new_request() -> None:
    """Forget the functions handed out for the last request (see called_function)."""
    _handed_out.clear()


def called_function(exc: BaseException | None) -> str | None:
    """The student's function that a probe of the suite was running when ``exc`` happened: the
    outermost frame of the traceback inside the submission (what the probe called, whatever that
    called in turn), else the function last handed to the probe (JAX may fail on what it returned,
    after it returned), else None. A student has never seen a probe, so a failure names this instead."""
    frames = [frame.f_code.co_name for frame, _ in traceback.walk_tb(exc.__traceback__ if exc else None)
              if _in_submission(os.path.abspath(frame.f_code.co_filename))]
    named = [name for name in frames if not name.startswith("<")]  # not <lambda>, <module>, <listcomp>
    return named[0] if named else (_handed_out[-1] if _handed_out else None)


def quoted_line(line: str | None, limit: int = 80) -> str:
    """`` at `line` `` for a message, the student's source line that raised (shortened), or nothing."""
    return f" at `{first_line(line, limit)}`" if line else ""


def classify(exc: BaseException, what: str) -> StudentFailure:
    """Turn an exception raised while running ``what`` into a StudentFailure: its type, the student's
    line that raised it (or that called into JAX when JAX raised it) and its message."""
    if isinstance(exc, StudentFailure):
        return exc
    facts = exception_facts(exc)
    if isinstance(exc, NotImplementedError) and facts["raised_in"] == "submission":  # JAX's own: a message below
        return StudentFailure("not_started", f"{what} still raises NotImplementedError", **facts)
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return StudentFailure("memory", f"{what} ran out of memory: {first_line(exc)}", **facts)
    if isinstance(exc, SystemExit):
        return StudentFailure("exited", f"{what} called sys.exit({exc.code!r})", **facts)
    if isinstance(exc, KeyboardInterrupt):
        return StudentFailure("raised", f"{what} raised KeyboardInterrupt", **facts)
    said = first_line(exc) or ("with no message (JAX gave no reason: the arguments of this line's JAX call are where "
                               "to look)" if facts["raised_in"] == "jax" else "with no message")
    sep = ": " if first_line(exc) else " "
    return StudentFailure("raised", f"{what} raised {facts['exc_type']}{quoted_line(facts['line'])}{sep}{said}",
                          **facts)


def import_student_module(module: str):
    """Import a submission module, turning a missing file, SyntaxError or ImportError into a verdict."""
    import importlib

    if module in sys.modules:
        return sys.modules[module]
    path = os.path.join(_submission, module + ".py")
    if not os.path.isfile(path):
        raise StudentFailure("missing_module", f"{module}.py is missing from your submission")
    try:
        return importlib.import_module(module)
    except SyntaxError as exc:
        where = f"{os.path.relpath(exc.filename or path, _submission)}:{exc.lineno}"
        raise StudentFailure("import_error", f"{module}.py has a SyntaxError: {exc.msg}", where,
                             "SyntaxError") from None
    except BaseException as exc:  # noqa: BLE001 - anything at import time is the student's
        err = classify(exc, f"importing {module}.py")
        if err.kind == "raised":
            err.kind = "import_error"
        raise err from None


def student_function(target: str):
    """The callable ``module.function`` from the submission, or a 'missing_function' verdict."""
    module, _, name = target.rpartition(".")
    mod = import_student_module(module)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise StudentFailure("missing_function", f"{module}.py has no function {name}")
    _handed_out.append(name)
    return fn


def check_signature(fn, target: str, args, kwargs) -> None:
    """Name a signature that cannot take the arguments the test passes, before running anything."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        name = target.rpartition(".")[2]
        raise StudentFailure("wrong_signature", f"{name}{sig} cannot be called with "
                             f"{plural(len(args), 'positional argument')}{' and ' + ', '.join(kwargs) if kwargs else ''}: {exc}")
