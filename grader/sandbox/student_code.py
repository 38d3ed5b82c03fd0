"""Importing and calling the student's code inside the worker, and naming what went wrong.

Every failure of student code becomes a :class:`grader.errors.StudentFailure` whose ``kind`` the
report can explain in one sentence: a missing file, a SyntaxError with file:line, a missing
function, a signature that cannot take the test's arguments, an exception (with the deepest frame
inside the submission), ``sys.exit``, running out of memory.
"""

from __future__ import annotations

import os
import sys
import traceback

from grader.errors import StudentFailure

_submission = ""  # the scratch copy of the submission this worker grades (see use_submission)


def use_submission(path: str) -> None:
    """Make ``path`` the folder student modules are imported from (after JAX and NumPy, so a
    student's numpy.py shadows nothing)."""
    global _submission
    _submission = os.path.abspath(path)
    sys.path.insert(0, _submission)


def student_frame(tb) -> str | None:
    """file:line of the deepest traceback frame inside the submission, as a relative path."""
    where = None
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.abspath(frame.f_code.co_filename)
        if _submission and path.startswith(_submission + os.sep):
            where = f"{os.path.relpath(path, _submission)}:{lineno}"
    return where


def first_line(text, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify(exc: BaseException, what: str) -> StudentFailure:
    """Turn an exception raised while running ``what`` into a StudentFailure."""
    if isinstance(exc, StudentFailure):
        return exc
    where = student_frame(exc.__traceback__)
    name = type(exc).__name__
    if isinstance(exc, NotImplementedError):
        return StudentFailure("not_started", f"{what} still raises NotImplementedError", where, name)
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return StudentFailure("memory", f"{what} ran out of memory: {first_line(exc)}", where, name)
    if isinstance(exc, SystemExit):
        return StudentFailure("exited", f"{what} called sys.exit({exc.code!r})", where, name)
    if isinstance(exc, KeyboardInterrupt):
        return StudentFailure("raised", f"{what} raised KeyboardInterrupt", where, name)
    return StudentFailure("raised", f"{what} raised {name}: {first_line(exc)}", where, name)


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
                             f"{len(args)} positional argument(s){' and ' + ', '.join(kwargs) if kwargs else ''}: {exc}")
