"""Handing a student's program to the grader as data: jax.export's serialized form, never text.

A structural verdict ("one psum carrying one number") is only worth something if it is read from
a program whose values are checked, on inputs the program could not have been fitted to. So for
program mode the student's worker gets the *shapes and dtypes* of the test's inputs
(:class:`grader.protocol.ArraySpec`), never their values; it traces ``jax.jit(fn)`` from those
alone (``jax.ShapeDtypeStruct``, as ``jax.jit`` does before it sees an array) and hands over the
serialized :class:`jax.export.Exported` (a flatbuffer holding a StableHLO module) as an array of
bytes. A clean worker that never imported student code deserialises, checks, compiles and runs it
on the test's inputs and on inputs the grader drew for this run alone
(:mod:`grader.sandbox.program_runner`). Whatever the student's process does to JAX, the most it can
do is hand over another program, and that program is then the one whose values and structure are
graded.

A function that cannot be exported gets a verdict naming why: it needs the values of its inputs
(``not_traceable``, which ``jax.jit`` would refuse too), or it uses something a serialized program
cannot carry, such as a host callback (``not_exportable``).
"""

from __future__ import annotations

import contextlib

import numpy as np

from grader.errors import StudentFailure
from grader.protocol import ArraySpec
from grader.sandbox import program_as_written
from grader.sandbox.mesh_in_trace import meshes_settable
from grader.sandbox.student_code import exception_facts, first_line, student_frame

CALLBACK_ADVICE = ("it calls back into Python on the host (jax.pure_callback, io_callback, jax.debug.print or "
                   "jax.debug.callback), which a compiled program cannot carry to the grader: compute with "
                   "jax.numpy and lax only, and remove debug prints")
# What each way of needing a value means, in the student's terms (the most specific error type first).
_NEEDS_VALUES = (
    ("TracerBoolConversionError", "a Python if, while, and/or or bool() on an array's value: use jnp.where or "
                                  "lax.cond, or decide from shapes (x.shape), which are known"),
    ("TracerIntegerConversionError", "an array's value used as a Python int (an index, a size or range()): "
                                     "sizes must come from shapes (x.shape), not from values"),
    ("TracerArrayConversionError", "NumPy (np.*) or np.asarray on a traced array: use jax.numpy (jnp.*), which "
                                   "jax.jit can trace"),
    ("ConcretizationTypeError", "a Python number made from an array's value (float(x), x.item(), int(x)): keep "
                                "it an array and compute with jax.numpy"),
)


def _why_not_exportable(exc: BaseException) -> str:
    text = str(exc)
    if "host_callback" in text or "python_cpu_callback" in text or "python_gpu_callback" in text:
        return CALLBACK_ADVICE
    if "custom calls whose targets have no compatibility guarantees" in text:
        return f"it uses an operation that cannot be exported ({first_line(text, 200)})"
    return f"jax.export refused it ({type(exc).__name__}: {first_line(text, 200)})"


def _needs_values(exc: BaseException, name: str) -> StudentFailure:
    kinds = {cls.__name__ for cls in type(exc).__mro__}
    how = next(why for kind, why in _NEEDS_VALUES if kind in kinds)
    return StudentFailure("not_traceable", f"{name} cannot be compiled with jax.jit, which knows only the shapes and "
                          f"dtypes of the inputs, not their values, and {name} needs a value: {how}",
                          **exception_facts(exc))


def abstract_inputs(specs):
    """The test's inputs as ``jax.ShapeDtypeStruct``: what the function is traced from."""
    import jax

    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, np.dtype(s.dtype)), specs,
                        is_leaf=lambda v: isinstance(v, ArraySpec))


def export_program(fn, specs: tuple, name: str) -> np.ndarray:
    """``jax.jit(fn)`` traced from the shapes and dtypes ``specs``, as written (its own layouts kept,
    :mod:`grader.sandbox.program_as_written`), exported and serialized: the bytes as a uint8 array. Exporting may
    trace the function again, so ``jax.set_mesh`` works in both (grader.sandbox.mesh_in_trace)."""
    with meshes_settable() as set_meshes:
        return _exported(fn, specs, name, set_meshes)


def _exported(fn, specs: tuple, name: str, set_meshes: list) -> np.ndarray:
    import jax

    inputs = abstract_inputs(specs)
    jitted = jax.jit(fn)
    try:
        traced = jitted.trace(*inputs)  # the student's Python runs here: what it raises is the student's own failure
    except (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError,
            jax.errors.TracerArrayConversionError) as exc:
        raise _needs_values(exc, name) from None
    set_meshes = list(set_meshes)  # the student's own: the as-written export below sets one of the grader's
    written = program_as_written.function(traced)
    if written is not None:
        try:  # as written; where JAX cannot export that, the program as jit reads it
            with program_as_written.mesh_context(traced):
                return np.frombuffer(bytes(jax.export.export(jax.jit(written))(*inputs).serialize()), dtype=np.uint8)
        except Exception:  # noqa: BLE001 - the plain export below tells a refusal of the program itself
            pass
    try:  # in the mesh the function set, where it set one: its Explicit types name that mesh's axes
        with jax.set_mesh(set_meshes[-1]) if set_meshes else contextlib.nullcontext():
            return np.frombuffer(bytes(jax.export.export(jitted)(*inputs).serialize()), dtype=np.uint8)
    except Exception as exc:  # noqa: BLE001 - past tracing, a refusal is the program's, not a crash
        if student_frame(exc.__traceback__) is not None:
            raise
        raise StudentFailure("not_exportable", f"{name} cannot be graded as one program: {_why_not_exportable(exc)}",
                             **exception_facts(exc)) from None
