"""The ``student`` fixture's object: the hidden tests' only handle on student code.

Every method sends a request to the worker for this case's configuration and returns plain
NumPy/Python data, or raises :class:`grader.errors.StudentFailure` with a one-line reason. In a
multi-process layout (``student.processes`` is set) every process runs the request and each method
returns a list with one result per process, in process order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from grader.errors import UNNAMED_CALL
from grader.layout import Layout
from grader.workers.pool import WorkerPool


@dataclass(frozen=True)
class Program:
    """One compiled program of the student's, run by a clean worker: what it returned for the test's
    inputs (``value``) and its optimised HLO text (``hlo``, read it with grader.suite.hlo)."""

    value: object
    hlo: str


class Student:
    def __init__(self, pool: WorkerPool, layout: Layout, timeout_s: float):
        self._pool, self.layout, self.timeout_s = pool, layout, timeout_s

    @property
    def devices(self) -> int:
        """How many devices the worker for this case has (per process in a multi-process layout)."""
        return self.layout.devices

    @property
    def backend(self) -> str:
        """Where the workers run: "cpu" (emulated devices), "gpu" or "tpu"."""
        return self._pool.backend.name

    @property
    def processes(self) -> int | None:
        """How many processes a multi-process layout joins; None for a single worker."""
        return self.layout.processes

    def _what(self, target: str) -> str:
        """How the grader's own verdicts (a time-out, a death) name the code a program request ran: the
        student's function, or for a probe of the suite, which the student has never seen, "a call into
        your code" (the worker names the student's function in what it reports itself)."""
        module, _, name = target.rpartition(".")
        return UNNAMED_CALL if os.path.isfile(os.path.join(self._pool.run.probes, module + ".py")) else f"{name}()"

    def _ask(self, op: str, target: str, args, kwargs, what: str, timeout_s: float | None):
        return self._pool.request(self.layout, op, target, args, kwargs, what, timeout_s or self.timeout_s)

    def call(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Call ``module.function`` from the submission with plain data; returns plain data."""
        return self._ask("call", target, args, kwargs, f"{target.rpartition('.')[2]}()", timeout_s)

    def program(self, target: str, *args, timeout_s: float | None = None, **kwargs) -> Program:
        """``jax.jit(module.function)`` on ``args`` as one program: exported by the student's worker,
        compiled and run on ``args`` by a clean worker that never imported student code.

        ``args`` are the program's inputs (arrays, or tuples/lists/dicts of them); ``kwargs`` are fixed
        while it is traced. For a probe module of the suite, ``target`` names a probe that takes
        ``kwargs`` and returns the function to export (e.g. a per-device function in jax.pmap).
        """
        value, hlo = self._pool.program(self.layout, target, args, kwargs, self._what(target),
                                        timeout_s or self.timeout_s)
        return Program(value, hlo)

    def jaxpr(self, target: str, *args, timeout_s: float | None = None, **kwargs) -> str:
        """``jax.make_jaxpr(module.function)(*args)`` as text."""
        return self._ask("jaxpr", target, args, kwargs, f"tracing {target.rpartition('.')[2]}()", timeout_s)

    def probe(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Run ``probes_module.function`` from the suite folder inside the worker."""
        return self._ask("probe", target, args, kwargs, UNNAMED_CALL, timeout_s)
