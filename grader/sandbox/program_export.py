"""Handing a student's program to the grader as data: jax.export's serialized form, never text.

A structural verdict ("one psum carrying one number") is only worth something if it is read from
the program whose values are checked. So for program mode the student's worker does not compile
or run anything: it traces ``jax.jit(fn)`` for the case's device count and input shapes and
dtypes, and hands over the serialized :class:`jax.export.Exported` (a flatbuffer holding a
StableHLO module) as an array of bytes. A clean worker that never imported student code
deserialises, checks, compiles and runs it (:mod:`grader.sandbox.program_runner`). Whatever the
student's process does to JAX, the most it can do is hand over another program, and that program
is then the one whose values and structure are graded.

A function that cannot be exported gets a verdict naming why: it needs concrete values
(``not_traceable``), or it uses something a serialized program cannot carry, such as a host
callback (``not_exportable``).
"""

from __future__ import annotations

import numpy as np

from grader.errors import StudentFailure
from grader.sandbox.student_code import exception_facts, first_line, student_frame

CALLBACK_ADVICE = ("it calls back into Python on the host (jax.pure_callback, io_callback, jax.debug.print or "
                   "jax.debug.callback), which a compiled program cannot carry to the grader: compute with "
                   "jax.numpy and lax only, and remove debug prints")


def _why_not_exportable(exc: BaseException) -> str:
    text = str(exc)
    if "host_callback" in text or "python_cpu_callback" in text or "python_gpu_callback" in text:
        return CALLBACK_ADVICE
    if "custom calls whose targets have no compatibility guarantees" in text:
        return f"it uses an operation that cannot be exported ({first_line(text, 200)})"
    return f"jax.export refused it ({type(exc).__name__}: {first_line(text, 200)})"


def export_program(fn, args: tuple, name: str) -> np.ndarray:
    """``jax.jit(fn)`` traced on ``args``, exported and serialized: the bytes as a uint8 array."""
    import jax

    jitted = jax.jit(fn)
    try:
        jitted.trace(*args)  # the student's Python runs here: what it raises is the student's own failure
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError) as exc:
        raise StudentFailure("not_traceable", f"{name} cannot be compiled with jax.jit (it turns a traced value "
                             f"into a concrete NumPy value or Python number): {first_line(exc, 160)}",
                             **exception_facts(exc)) from None
    try:
        return np.frombuffer(bytes(jax.export.export(jitted)(*args).serialize()), dtype=np.uint8)
    except Exception as exc:  # noqa: BLE001 - past tracing, a refusal is the program's, not a crash
        if student_frame(exc.__traceback__) is not None:
            raise
        raise StudentFailure("not_exportable", f"{name} cannot be graded as one program: {_why_not_exportable(exc)}",
                             **exception_facts(exc)) from None
