"""The pytest plugin the grader loads into its own process to run a hidden suite.

It maps test files to tasks (course.yaml), parametrises every test that uses ``student`` over the
task's device counts, provides the ``student``, ``devices`` and seeded ``rng`` fixtures, and records
one :class:`Case` per (test, device count) with a one-line reason when it fails. Nothing here
imports student code; the student fixture only talks to workers.
"""

from __future__ import annotations

import os
import secrets
import time
import zlib
from collections import Counter

import numpy as np
import pytest

from grader.course import Exercise
from grader.errors import GraderError, StudentFailure
from grader.grading.budget import TimeBudget
from grader.grading.case import Case
from grader.grading.progress import RunProgress
from grader.grading.reference_figures import ReferenceFigures
from grader.grading.student import Student
from grader.layout import Layout
from grader.suite import differences, feedback, jax_errors, traced
from grader.suite.checks import Bypass, Unexplained, WrongProgram
from grader.workers import timeline
from grader.workers.pool import WorkerPool




# The most of a failed check's message a case keeps: room for a measured value, what it differs by and a measured
# difference of communication; past it a message is cut (a communication block carries the whole listing).
MESSAGE_CHARS = 600


def _one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _params(item) -> dict:
    return item.callspec.params if hasattr(item, "callspec") else {}


def _layout(item) -> Layout:
    params = _params(item)
    return Layout(params.get("devices"), params.get("processes"))


def _names(function) -> tuple[str, ...]:
    return getattr(getattr(function, "__code__", None), "co_names", ())


def _runs_programs(item) -> bool:
    """Whether the test's own code asks for a program (``student.program``), or a function of its suite that it
    calls does (a structural test reading each configuration through a helper): it reads their names, so one asked
    for deeper down is missed, which costs only the early start of a clean worker."""
    names, module = _names(getattr(item, "function", None)), getattr(item, "module", None)
    return "program" in names or any("program" in _names(getattr(module, name, None)) for name in names)


def explain(exc: BaseException, devices: int | None = None, rules=jax_errors.RULES) -> tuple[str, str, str | None]:
    """(kind, one-line message, where) for an exception that ended a test; a JAX error the ``rules``
    know is told as the mistake behind it (:mod:`grader.suite.jax_errors`)."""
    if isinstance(exc, StudentFailure):
        said = jax_errors.explain(exc, devices, rules)
        if said is None and getattr(exc, "called_as", None):  # the student's own raise, on an input the test chose
            said = f"{exc.message}; your own code raised it, on {exc.called_as}, an input the task allows"
        return exc.kind, said or exc.message, exc.where
    if isinstance(exc, AssertionError):
        return "wrong", _one_line(exc) or "a check failed", None
    return "wrong", f"the result could not be checked ({type(exc).__name__}: {_one_line(exc, 200)})", None


def with_traced(message: str, said: str, unexplained: bool) -> str:
    """A wrong value's ``message`` completed by how a function of the case, traced again, differs from the
    reference's (Student.traced_difference): the measured difference replaces a guess of where to look. Where
    both do not fit, an ``unexplained`` message (only where values differ) is cut for it; one that measured
    something (a suite's reading, the compiled programs' difference) is kept whole and goes without it."""
    addition = f"{traced.COMPARED}: {said}"
    cut = message.endswith("...")
    head = message[:-3] if cut else differences.without_guess(message)
    room = MESSAGE_CHARS - len(addition) - 2
    if not cut and len(head) <= room:
        return _one_line(f"{head}. {addition}")
    return _one_line(f"{head[: room - 3].rstrip()}... {addition}") if unexplained else message


def _unexplained(exc: BaseException) -> bool:
    """Whether a failure's message says only where values differ (grader.suite.checks.Unexplained)."""
    return isinstance(exc, Unexplained) or (isinstance(exc, WrongProgram) and exc.unexplained and not exc.measured)


def _told(exc: BaseException, message: str, traced_after: bool) -> int:
    """How much a failed case's message measured (Case.told)."""
    if _unexplained(exc) and not traced_after:
        return 0
    return 1 if differences.ambiguous(message) else 2


def _measure(exc: StudentFailure) -> None:
    """A failure JAX raised while tracing the student's code, measured against the reference's trace now that
    it ends a case (Student sets ``measure``; an expected raise is never measured)."""
    measure = getattr(exc, "measure", None)
    if callable(measure):
        exc.measured = measure()


def _either(counts) -> str:
    """Device counts as a reader says them: "2, 4 or 8"."""
    *rest, last = map(str, counts)
    return f"{', '.join(rest)} or {last}" if rest else last


class CasePlan:
    """Which cases a suite has: every test that takes ``devices`` once per device count (or layout) of
    its task, ``devices`` overriding course.yaml's. Grading runs them (GraderPlugin); a release counts
    the hidden ones without running anything."""

    def __init__(self, exercise: Exercise, devices: tuple[int, ...] | None = None):
        self.exercise, self.devices_override = exercise, devices

    def _task(self, path) -> object:
        return self.exercise.task_for_file(os.path.basename(str(path)))

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "devices(*counts): run only at these device counts")

    def pytest_generate_tests(self, metafunc):
        if "devices" not in metafunc.fixturenames:
            return
        task = self._task(metafunc.definition.path)
        marker = metafunc.definition.get_closest_marker("devices")
        if task and task.processes and "processes" in metafunc.fixturenames:
            self._parametrize_layouts(metafunc, task.processes, marker)
            return
        counts = task.devices if task else (1,)
        if self.devices_override:  # --devices: for a task with counts of its own, those of them it is graded at
            own = task is not None and task.own_devices
            counts = tuple(c for c in self.devices_override if not own or c in counts) or self.devices_override
        kept = tuple(c for c in counts if c in marker.args) if marker else counts
        if not kept and self.devices_override:  # a structural test at one device would measure nothing
            left_out = pytest.mark.skip(reason=f"left out by --devices {','.join(map(str, self.devices_override))}: "
                                               f"it is graded at device counts {_either(marker.args)}")
            metafunc.parametrize("devices", [pytest.param(n, id=f"{n}dev", marks=left_out) for n in counts])
            return
        counts = kept or counts
        metafunc.parametrize("devices", counts, ids=[f"{n}dev" for n in counts])

    def _parametrize_layouts(self, metafunc, layouts, marker):
        """One case per layout; those whose local device count --devices leaves out are shown skipped."""
        if marker:
            layouts = tuple(lay for lay in layouts if lay.devices in marker.args) or layouts
        wanted = self.devices_override
        left_out = pytest.mark.skip(reason=f"left out by --devices {','.join(map(str, wanted or ()))}")
        metafunc.parametrize(("processes", "devices"), [
            pytest.param(lay.processes, lay.devices, id=lay.spec, marks=left_out if wanted and lay.devices not in wanted else ())
            for lay in layouts])

    @pytest.fixture
    def processes(self):
        """None: one worker; a multi-process layout parametrizes it (see _parametrize_layouts)."""
        return None


class GraderPlugin(CasePlan):
    """``exercise`` holds the graded tasks only; ``devices`` and ``timeout_s`` override course.yaml."""

    def __init__(self, exercise: Exercise, pool: WorkerPool, seed: int, devices: tuple[int, ...] | None,
                 timeout_s: float | None = None, progress: RunProgress | None = None,
                 references: ReferenceFigures | None = None):
        super().__init__(exercise, devices)
        self.references = references
        self.pool, self.backend, self.seed, self.timeout_override = pool, pool.backend, seed, timeout_s
        self.progress = progress or RunProgress(None)
        self.budget = TimeBudget()
        self._cut_short: set[str] = set()
        self.planned: Counter[str] | None = None  # cases per task id, once collected
        self.interrupted = False
        self.cases: list[Case] = []
        self.unmapped_files: set[str] = set()
        self.collection_errors: list[str] = []
        self.grader_errors: list[str] = []
        self._feedback: dict[str, list[dict]] = {}
        self._collecting = 0.0  # when collection began (for the timeline)
        self._program_layouts: set[Layout] = set()  # layouts some collected test runs a program at
        # The inputs program mode draws beyond the test's own come from this run's secret, which no report,
        # gradebook or log holds: the printed seed reproduces the test's inputs, never these.
        self._fresh_secret = secrets.randbits(128)
        self._listed: dict[str, int] = {}  # each case's place in the suite's order, which the report keeps
        self._last_at: dict[Layout, str] = {}  # the last case run at each layout

    def pytest_collection_modifyitems(self, session, config, items):
        keep = []
        for item in items:
            task = self._task(item.path)
            if task is None:
                self.unmapped_files.add(os.path.basename(str(item.path)))
            else:
                keep.append(item)
        self._listed = {item.nodeid: place for place, item in enumerate(keep)}
        # one layout after another (in the suite's order within each), so that each layout's workers end with
        # its last case and a run holds one layout's processes at a time; the report keeps the suite's order
        keep.sort(key=lambda it: (_params(it).get("processes") or 0, _params(it).get("devices") or 0))
        self._last_at = {_layout(item): item.nodeid for item in keep}
        items[:] = keep
        self.planned = Counter(self._task(item.path).id for item in keep)
        self._program_layouts = {_layout(item) for item in keep if _runs_programs(item)}
        self.progress.planned(self.planned)

    def pytest_collection(self, session):
        self._collecting = time.monotonic()

    def pytest_collection_finish(self, session):
        timeline.span("grader", "collect the suite", self._collecting, time.monotonic())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """After a case, a layout that program tests will need a clean worker for gets it forked (it warms up
        while the student's next calls run, instead of starting when the first program test asks)."""
        began = time.monotonic()
        yield
        timeline.span("grader", item.nodeid.rpartition("::")[2], began, time.monotonic())
        layout = _layout(item)
        if layout.devices and self._last_at.get(layout) == item.nodeid:
            self.pool.finish(layout)
        elif layout.devices and not layout.processes and layout in self._program_layouts:
            self.pool.prestart_clean(layout)

    def pytest_sessionfinish(self, session):
        """The cases in the suite's order (tests top to bottom, each at every layout), whatever order they ran in."""
        self.cases.sort(key=lambda case: self._listed.get(case.nodeid, len(self._listed)))

    def pytest_keyboard_interrupt(self, excinfo):
        """Ctrl-C or SIGTERM; pytest also calls this when it stops itself (session.shouldstop), which is not one."""
        self.interrupted = not isinstance(excinfo.value, pytest.Session.Interrupted)

    def unfinished(self) -> tuple[str, ...]:
        """Ids of the tasks not every case of which ran (all of them if the suite was not collected)."""
        done = Counter(c.task for c in self.cases)
        return tuple(t.id for t in self.exercise.tasks if self.planned is None or done[t.id] < self.planned[t.id])

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append(f"{report.nodeid}: {_one_line(report.longreprtext, 600)}")

    @pytest.fixture
    def student(self, request, devices, processes):
        reason = self.backend.unavailable(devices, processes)
        if reason:
            pytest.skip(f"not run here ({reason})")
        task = self._task(request.node.path)
        layout = Layout(devices, processes)
        spent = self.budget.spent(task.id, layout)
        if spent:
            self._cut_short.add(request.node.nodeid)
            raise spent
        return Student(self.pool, layout, self.timeout_override or task.timeout_s,
                       self._generator(self._fresh_secret, request), self.references)

    @staticmethod
    def _generator(seed: int, request) -> np.random.Generator:
        return np.random.default_rng([seed, zlib.crc32(request.node.nodeid.encode())])

    @pytest.fixture
    def rng(self, request):
        """A generator seeded by the run's seed and the test's id: reproducible, order-independent."""
        return self._generator(self.seed, request)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        with feedback.recording() as notes:
            yield
        self._feedback[item.nodeid] = notes

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            params = _params(item)
            case = Case(nodeid=item.nodeid, test=item.originalname, task=self._task(item.path).id,
                        devices=params.get("devices"), processes=params.get("processes"),
                        outcome=report.outcome, duration_s=report.duration,
                        feedback=self._feedback.pop(item.nodeid, []))
            if report.failed and isinstance(getattr(call.excinfo, "value", None), GraderError):
                self.grader_errors.append(str(call.excinfo.value))
                item.session.shouldstop = "the grader cannot go on"
            elif report.failed and call.excinfo is not None:
                exc = call.excinfo.value
                rules = (*getattr(item.module, "JAX_ERRORS", ()), *jax_errors.RULES)  # the suite's own first
                if isinstance(exc, StudentFailure):
                    _measure(exc)
                case.kind, case.message, case.where = explain(exc, case.devices, rules)
                student = getattr(item, "funcargs", {}).get("student")
                said = None
                if isinstance(exc, AssertionError) and not isinstance(exc, Bypass) and isinstance(student, Student):
                    said = student.traced_difference()
                    case.message = with_traced(case.message, said, _unexplained(exc)) if said else case.message
                case.told = _told(exc, case.message, bool(said))
                case.error = (getattr(exc, "detail", None) or "") if isinstance(exc, StudentFailure) else ""
                case.cut_short = item.nodeid in self._cut_short
                if case.devices:
                    self.budget.charge(case.task, Layout(case.devices, case.processes), case.kind, case.message,
                                       case.where)
            elif report.skipped:
                case.kind, case.message = "not_run", _one_line(getattr(call.excinfo, "value", "") or "skipped")
            self.cases.append(case)
            self.progress.case_done(case.task)
