"""The ``student`` fixture's object: the hidden tests' only handle on student code.

Every method sends a request to the worker for this case's configuration and returns plain
NumPy/Python data, or raises :class:`grader.errors.StudentFailure` with a one-line reason. In a
multi-process layout (``student.processes`` is set) every process runs the request and each method
returns a list with one result per process, in process order.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.layout import Layout
from grader.workers.pool import WorkerPool


@dataclass(frozen=True)
class Program:
    """One compiled program of the student's, run by a clean worker: what it returned for the test's
    inputs (``value``) and its optimised HLO text (``hlo``, read it with grader.suite.hlo)."""

    value: object
    hlo: str


def _expect_values(got, expected, what: str, rtol: float, atol: float) -> None:
    """TEMP shim: ``got`` matches the reference ``expected`` (an array, or a tuple of them)."""
    from grader.suite.checks import expect_close, expect_sequence

    if isinstance(expected, (tuple, list)):
        for i, (g, e) in enumerate(zip(expect_sequence(got, len(expected), what), expected)):
            _expect_values(g, e, f"{what}[{i}]", rtol, atol)
    else:
        expect_close(got, expected, what, rtol=rtol, atol=atol)


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

    def _ask(self, op: str, target: str, args, kwargs, what: str, timeout_s: float | None):
        return self._pool.request(self.layout, op, target, args, kwargs, what, timeout_s or self.timeout_s)

    def call(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Call ``module.function`` from the submission with plain data; returns plain data."""
        return self._ask("call", target, args, kwargs, f"{target.rpartition('.')[2]}()", timeout_s)

    def program(self, target: str, *args, expect=None, what: str | None = None, rtol: float = 1e-4,
                atol: float = 1e-5, fresh=None, timeout_s: float | None = None, **kwargs) -> Program:
        """``jax.jit(module.function)`` on ``args`` as one program: exported by the student's worker,
        compiled and run on ``args`` by a clean worker that never imported student code.

        ``args`` are the program's inputs (arrays, or tuples/lists/dicts of them); ``kwargs`` are fixed
        while it is traced. For a probe module of the suite, ``target`` names a probe that takes
        ``kwargs`` and returns the function to export (e.g. a per-device function in jax.pmap).
        ``expect(*args)`` is the NumPy reference the value must match (``what`` names the call).
        """
        del fresh  # TEMP shim: values are checked on the test's inputs only
        name = f"{target.rpartition('.')[2]}()"
        value, hlo = self._pool.program(self.layout, target, args, kwargs, name, timeout_s or self.timeout_s)
        if expect is not None:
            _expect_values(value, expect(*args), what or name, rtol, atol)
        return Program(value, hlo)

    def jaxpr(self, target: str, *args, timeout_s: float | None = None, **kwargs) -> str:
        """``jax.make_jaxpr(module.function)(*args)`` as text."""
        return self._ask("jaxpr", target, args, kwargs, f"tracing {target.rpartition('.')[2]}()", timeout_s)

    def probe(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Run ``probes_module.function`` from the suite folder inside the worker."""
        return self._ask("probe", target, args, kwargs, target.rpartition(".")[2], timeout_s)
