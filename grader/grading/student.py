"""The ``student`` fixture's object: the hidden tests' only handle on student code.

Every method sends a request to the worker for this case's configuration and returns plain
NumPy/Python data, or raises :class:`grader.errors.StudentFailure` with a one-line reason. In a
multi-process layout (``student.processes`` is set) every process runs the request and each method
returns a list with one result per process, in process order.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import numpy as np

from grader.errors import UNNAMED_CALL, GraderError, StudentFailure
from grader.grading import program_mode
from grader.grading.program_mode import Program
from grader.grading.reference_figures import ReferenceFigures
from grader.layout import Layout, plural
from grader.suite import bypass, differences, feedback, traced, work
from grader.suite.checks import Bypass, WrongProgram
from grader.suite.differences import Probe
from grader.workers.pool import WorkerPool

# How a wrong program's message says that its compiled communication differs from the reference's.
COMMUNICATION = "Its communication differs from the reference's"


class Student:
    def __init__(self, pool: WorkerPool, layout: Layout, timeout_s: float, fresh_rng: np.random.Generator,
                 references: ReferenceFigures | None = None):
        """``fresh_rng``: the case's stream for inputs program mode draws, seeded by the run's secret
        (never by the printed seed that seeds the test's ``rng``); ``references``: the figures of the
        course's reference programs that a program is compared with."""
        self._pool, self.layout, self.timeout_s, self._fresh_rng = pool, layout, timeout_s, fresh_rng
        self._references = references
        self._asked: list[tuple] = []  # (target, specs, kwargs, what, label) of traceable calls that returned, last first

    @property
    def devices(self) -> int:
        """How many devices the worker for this case has (per process in a multi-process layout)."""
        return self.layout.devices

    @property
    def backend(self) -> str:
        """Where this case's workers run: "cpu" (emulated devices), "gpu" or "tpu" (under --backend auto, a
        configuration the accelerators cannot take runs on "cpu")."""
        return self._pool.backend.placed(self.layout.devices, self.layout.processes).name

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

    def _traced(self, target: str, specs, kwargs, what: str, timeout_s: float | None):
        """How the student's function, traced again, differs from the reference's traced the same way
        (grader.suite.traced), or None where either trace is not at hand."""
        if self._references is None:
            return None
        timeout_s = timeout_s or self.timeout_s
        theirs = self._references.traced(self.layout, target, specs, kwargs, what, timeout_s)
        mine = None if theirs is None else self._pool.traced_collectives(self.layout, target, specs, kwargs, what,
                                                                         timeout_s)
        return None if mine is None else traced.measured(mine, theirs)

    def _keep_trace(self, target: str, specs, kwargs, what: str, label: str, timeout_s: float | None) -> None:
        """Where the reference is at hand, keep its trace for this call (a release carries it), and remember the
        call, as the student knows it (``label``), for :meth:`traced_difference`."""
        references = self._references
        if references and references.can_measure:
            references.traced(self.layout, target, specs, kwargs, what, timeout_s or self.timeout_s)
        self._asked = [a for a in self._asked if a[0] != target][:1]
        self._asked.insert(0, (target, specs, kwargs, what, label))

    def traced_difference(self, timeout_s: float | None = None) -> str | None:
        """After a wrong value: how a function this case called, traced again, differs from the reference's
        traced the same way: the first input or result it lays out otherwise (grader.suite.mapped), else the
        first collective it asks for otherwise (grader.suite.traced); the last function called asked first (two
        at most); None where none differs."""
        for target, specs, kwargs, what, label in self._asked:
            said = self._traced(target, specs, kwargs, what, timeout_s)
            if said and said != traced.SAME:
                return f"in {label}, {said}"
        return None

    def call(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Call ``module.function`` from the submission with plain data; returns plain data. A failure
        the student's own code raised carries the call it raised on (``called_as``), for the report; one
        JAX raised while it traced the student's code can be measured against the reference's trace
        (``measure``, asked only for a failure that ends a case)."""
        name = target.rpartition(".")[2]
        traceable = args and all(isinstance(a, np.ndarray) and a.dtype.kind in "biufc" for a in args)
        specs = program_mode.specs(args) if traceable else None
        try:
            value = self._ask("call", target, args, kwargs, f"{name}()", timeout_s)
        except StudentFailure as failure:
            if failure.kind == "raised" and failure.raised_in == "submission":
                failure.called_as = called_as(name, args, kwargs)
            if failure.kind == "raised" and failure.raised_in == "jax" and specs is not None:
                failure.measure = functools.partial(self._traced, target, specs, kwargs, f"{name}()", timeout_s)
            raise
        if specs is not None and not self.layout.processes:
            self._keep_trace(target, specs, kwargs, f"{name}()", name, timeout_s)
        return value

    def program(self, target: str, *args, expect, what: str | None = None, rtol: float = 1e-4, atol: float = 1e-5,
                dtype=None, fresh=None, arrives=None, counts: dict | None = None, probe: Probe | None = None,
                asks: bypass.Asks | None = None, compare=None, counts_work: bool = True, devices: int | None = None,
                timeout_s: float | None = None, **kwargs) -> Program:
        """``jax.jit(module.function)`` as one program, graded by processes that never ran student code.

        The student's worker traces and exports it from the shapes and dtypes of ``args`` alone (arrays,
        or tuples/lists/dicts of them); ``kwargs`` stay fixed while it is traced (for a probe module of
        the suite, ``target`` names a probe that takes ``kwargs`` and returns the function to export). A
        clean worker compiles it and runs it on ``args`` and on inputs drawn for this run (``fresh(rng)``,
        or by the rule in grader.grading.program_mode); each run's values must match ``expect(*inputs)``
        within ``rtol``/``atol`` (integers and bools exactly; a collective that moves them by less is idle: the
        program passes without it), and in ``dtype`` where one is given, else
        WrongProgram (an AssertionError) naming ``what`` (default: the function's name), the device count and
        which inputs. ``arrives``: how the task hands the inputs over, one entry per positional input, each
        None (whole on every device) or a PartitionSpec as a list (``["data", None]``: rows split over the
        mesh axis 'data') on the mesh the program declares; the clean worker places them so, and a
        program that wants its inputs elsewhere must move them itself. Without it every input arrives
        whole on every device.
        ``counts`` (name -> number, e.g. meshes.counts(...)) name the factor a wrong value is
        off by, besides the device count; ``probe`` (its splits, out and rerun) lets a wrong value on the
        test's inputs be measured one block at a time (grader.suite.differences), ``expect`` its reference.
        ``asks`` (grader.suite.bypass.Asks, for a test that grades how the program is built): what the
        statement asks it to be built with; a program that reaches its answer by another mechanism (no
        per-device computation where one is asked for; inputs handed over in blocks gathered whole at its
        entry) fails with grader.suite.bypass's sentence (Bypass) before its values are looked at.
        ``counts_work=False``: the inputs are too small for a count of one device's arithmetic to tell the
        algorithm (the padding a device's block needs is then its work), so the mechanism is told from the
        per-device computation alone, not from work done on every device or left outside it.
        ``devices``: how many devices the program maps over where fewer than the case has (a jax.pmap over the
        n - 1 rows of x); a program built for any other count is refused.
        ``compare`` (True, or the mesh it runs on as (axis names, sizes)): this program is compared with the
        reference's compiled the same way; its figures (grader.grading.reference_figures) are read or measured
        whenever the call runs, so ``grade check`` measures every one a release needs, and a wrong value is
        told with the first difference between the collectives the two run (grader.suite.structure), in the
        message and in a communication block attached to the case (a message is cut at plugin.MESSAGE_CHARS).
        """
        what = what or target.rpartition(".")[2]
        if arrives is not None and (len(arrives) != len(args) or not all(isinstance(a, np.ndarray) for a in args)):
            raise GraderError(f"student.program's arrives gives {len(arrives)} layouts for {len(args)} inputs; it "
                              "needs one per input, each an array")
        input_sets = [tuple(args), *program_mode.fresh_inputs(args, fresh, self._fresh_rng, what)]
        specs, layouts = program_mode.specs(args), None if arrives is None else [None if a is None else list(a)
                                                                                  for a in arrives]
        try:
            out = self._pool.program(self.layout, target, specs, input_sets, kwargs, self._what(target),
                                     timeout_s or self.timeout_s, layouts, (rtol, atol),
                                     f"the program of {what}" if self._what(target) == UNNAMED_CALL else "")
        except StudentFailure as failure:
            if failure.kind == "raised" and failure.raised_in == "submission":
                failure.called_as = f"{what} with inputs {', '.join(map(_value_text, args))}"
            if failure.kind == "raised" and failure.raised_in == "jax":  # a program JAX refused to build
                failure.measure = functools.partial(self._traced, target, specs, kwargs, self._what(target),
                                                    timeout_s)
            raise
        built, wanted = out["devices"], devices or self.devices
        if built not in (1, wanted):
            named = f"the program of {what}" if self._what(target) == UNNAMED_CALL else f"{what}'s program"
            raise StudentFailure("not_exportable", f"{named} was refused: it was built for {plural(built, 'device')}, "
                                 f"and this test runs it on {wanted}")
        references = self._references
        self._keep_trace(target, specs, kwargs, self._what(target), what, timeout_s)
        reference = references and functools.cache(functools.partial(  # read once per program, however often asked
            references.figure, self.layout, target, specs, tuple(args), kwargs, layouts, self._what(target),
            timeout_s or self.timeout_s))
        program = Program(out["values"][0], out["hlo"], out["manual"], reference,
                          None if compare is None or compare is True else (tuple(compare[0]), tuple(compare[1])), what,
                          None if out["held"] is None else tuple(out["held"]), out["holds_manual"],
                          work.outside_per_device(out["hlo"], out["outside"], out["inside"]))
        mechanism = asks and (bypass.told(what, wanted, program.manual, program.hlo, asks, arrives,
                                          [np.shape(a) if isinstance(a, np.ndarray) else None for a in args],
                                          program.holds_manual, reference and program.reference_collectives)
                              or (counts_work and reference and work.whole_on_every_device(program, what, wanted))
                              or (counts_work and reference and asks.tool
                                  and work.left_outside(program, what, wanted, asks.tool)))
        if mechanism:  # what the program ran beside the reference's, since the suite's own block is never reached
            feedback.communication(program, by_student=False)
            raise Bypass(mechanism, program)
        probe = probe and dataclasses.replace(probe, reference=expect, inputs=tuple(args))
        compared = compare is not None and reference
        if compared:  # read or measured on every call, so that `grade check` keeps every figure a release needs
            program.reference_collectives()
        try:
            program_mode.check_values(program, out["values"], input_sets, expect, what, wanted, rtol, atol,
                                      dtype, counts, probe)
        except WrongProgram as wrong:
            differs = program.difference(results=wrong.results) if compared else None
            if not differs:
                raise
            feedback.communication(program, by_student=False)  # the whole listing, where a long message is cut
            raise WrongProgram(f"{differences.without_guess(str(wrong))}. {COMMUNICATION}: {differs}", program,
                               differs, wrong.results) from None
        return program

    def probe(self, target: str, *args, timeout_s: float | None = None, **kwargs):
        """Run ``probes_module.function`` from the suite folder inside the worker."""
        return self._ask("probe", target, args, kwargs, UNNAMED_CALL, timeout_s)


def _value_text(value) -> str:
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value):
        return f"{value.dtype}[{','.join(map(str, value.shape))}]"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_value_text(v) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_text(v)}" for k, v in list(value.items())[:4]) + "}"
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 20 else text[:17] + "..."


def called_as(name: str, args, kwargs) -> str:
    """The call as the student would read it, arrays by dtype and shape:
    ``distributed_dot(float32[37], float32[37])``."""
    return f"{name}({', '.join([*map(_value_text, args), *(f'{k}={_value_text(v)}' for k, v in kwargs.items())])})"
