"""The catalogues of wrong submissions (tests/grader/catalogues/test_catalogue_*.py) and how they are graded.

A wrong submission is a reference solution with one realistic mistake edited in (:func:`mutate`) or
a module replaced (:class:`Wrong`); grading it must cost points on its task, with a reason that
names the mistake and holds none of the advice that would be wrong for it. A correct submission
written another way than the reference (:class:`Right`) must keep every point.

Each entry is graded by a real ``grade`` run, as a student's submission would be. What makes a
catalogue cheap: the first test of a catalogue starts the gradings of all its entries, a few ``grade``
processes at a time (one per core, half the cores in a parallel run; ``CATALOGUE_JOBS`` overrides),
and each test waits for its own; and the task the mistake does not belong to (``intact``) is graded
with the first wrong submission only, since that a mistake in one module costs nothing on another
task is the engine's property, not the entry's (an entry names its own ``intact`` where the two tasks share a module).
For the same reason the catalogues are graded together (:class:`_Runs`): one submission carries an
entry of each of several tasks, and one ``grade`` run grades those tasks, so what a run costs beyond
its tasks (Python, the grader's imports, the zygote's ``import jax``, the workers' start) is paid once
for several entries. The catalogue test files run in one pytest process for that (the scheduler in
tests/grader/conftest.py).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from conftest import ROOT, build_submission, run_grade, task

DEVICES = "1,2,4"
SEED = 1234
# Gradings at once: one per core; in a parallel run (pytest-xdist) the one process that has the catalogue
# folder (tests/grader/conftest.py), about 40 % of the suite's test time, takes half the cores (one of 2),
# however many processes share the rest.
_JOBS = int(os.environ.get("CATALOGUE_JOBS") or
            len(os.sched_getaffinity(0)) // min(2, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
_pool = ThreadPoolExecutor(max_workers=max(1, _JOBS), thread_name_prefix="catalogue")
_scratch = Path(tempfile.mkdtemp(prefix="grade-catalogues-"))
atexit.register(shutil.rmtree, _scratch, ignore_errors=True)


@dataclass(frozen=True)
class Wrong:
    """A wrong submission: the modules it replaces, the device counts it is graded at, the words its
    task's reason must hold (``says``), the words no message of the task may hold (``never``: advice
    that would be wrong for this mistake), and, optionally, ``fails``: (test, words, device counts)
    for each test that must fail at exactly those counts with a message holding every word (of a
    parametrised test, only the failed cases whose message holds the first word count, so one
    submission can carry a mistake per parameter). ``intact``: a task that must keep full points
    with this submission (else the catalogue's, checked with its first wrong submission only)."""

    modules: dict[str, str]
    devices: str = DEVICES
    says: tuple[str, ...] = ()
    never: tuple[str, ...] = ()
    fails: tuple[tuple[str, tuple[str, ...], set[int]], ...] = ()
    intact: str | None = None


@dataclass(frozen=True)
class Right:
    """A correct submission written another way than the reference, graded at ``devices``."""

    modules: dict[str, str]
    devices: str = "1,4"


@dataclass
class Catalogue:
    """The wrong and right submissions of one ``task`` of ``exercise``; ``intact`` is another task."""

    task: str
    wrong: dict[str, Wrong]
    right: dict[str, Right] = field(default_factory=dict)
    intact: str | None = None
    exercise: str = "exercise7"

    def __post_init__(self):
        _catalogues.append(self)

    def _tasks(self, name: str, entry) -> tuple[str, ...]:
        if isinstance(entry, Right):
            return (self.task,)
        first = next(iter(self.wrong)) == name
        intact = entry.intact or (self.intact if first else None)
        return (self.task, intact) if intact else (self.task,)

    def entries(self) -> dict[str, Wrong | Right]:
        return {**self.wrong, **self.right}

    def report(self, name: str) -> dict:
        """The JSON report of entry ``name`` (of its shared run), starting every run that grades an entry
        of this catalogue on the first call."""
        global _runs
        if _runs is None:
            _runs = _Runs(_catalogues)
        return _runs.report(self, name)

    def expect_caught(self, name: str) -> dict:
        """Wrong submission ``name`` loses points on the task as its entry says; returns the task's report."""
        entry, report = self.wrong[name], self.report(name)
        lost = task(report, self.task)
        assert lost["score"] < lost["max_score"], f"{self.task} kept full points"
        for word in entry.says:
            assert word in lost["reason"], f"{self.task}'s reason does not say {word!r}: {lost['reason']}"
        messages = [lost["reason"], *(c["message"] for c in lost["cases"] if c["outcome"] != "passed")]
        for word in entry.never:
            wrong = [m for m in messages if word in m]
            assert not wrong, f"{self.task}'s messages give advice wrong for this mistake ({word!r}): {wrong[0]}"
        for test, words, devices in entry.fails:
            expect_mistake(lost, test, words, devices)
        for other in self._tasks(name, entry)[1:]:
            kept = task(report, other)
            assert kept["score"] == kept["max_score"], f"{other} lost points: {kept['reason']}"
        return lost

    def expect_full_marks(self, name: str) -> None:
        """Correct submission ``name`` keeps every point of the task."""
        graded = task(self.report(name), self.task)
        assert graded["score"] == graded["max_score"], graded["reason"]


_catalogues: list[Catalogue] = []  # every catalogue made in this process, in the order made
_runs: _Runs | None = None  # their shared runs, planned when the first report is asked for


@dataclass
class _Run:
    """One ``grade`` run: one submission holding an entry of each of several tasks of ``exercise``."""

    exercise: str
    devices: str
    shared: bool  # whether other entries may join
    members: list[tuple[Catalogue, str]] = field(default_factory=list)
    tasks: set[str] = field(default_factory=set)  # the tasks graded
    modules: set[str] = field(default_factory=set)  # the modules those tasks read
    graded: Future | None = None

    def fits(self, exercise: str, devices: str, tasks: set[str], modules: set[str]) -> bool:
        return (self.shared and (self.exercise, self.devices) == (exercise, devices)
                and not (self.tasks & tasks or self.modules & modules))

    def grade(self, folder: Path) -> dict:
        entries = [catalogue.entries()[name] for catalogue, name in self.members]
        modules = {module: source for entry in entries for module, source in entry.modules.items()}
        return _graded(self.exercise, modules, sorted(self.tasks), self.devices, folder)


class _Runs:
    """Every entry of ``catalogues`` placed in a shared run.

    An entry joins the first run of its exercise and device counts that grades none of its tasks (its
    own, and the task it must leave intact) and whose tasks read none of the modules its tasks read. What
    a task reads is taken to be every module that an entry of a catalogue of that task replaces (ring and
    ring_optimal share ring.py, so they never meet); an entry with a task no catalogue has an entry for,
    or of a catalogue made after the plan, runs alone. So each task in a run is graded on its own entry's
    modules and the solutions'. A run starts when a report of a catalogue with an entry in it is asked for."""

    def __init__(self, catalogues: list[Catalogue]):
        self.reads: dict[tuple[str, str], set[str]] = defaultdict(set)
        for catalogue in catalogues:
            for entry in catalogue.entries().values():
                self.reads[catalogue.exercise, catalogue.task] |= set(entry.modules)
        self.runs: list[_Run] = []
        self._of: dict[tuple[int, str], _Run] = {}
        for catalogue in catalogues:
            self._place(catalogue, shared=True)

    def _place(self, catalogue: Catalogue, shared: bool) -> None:
        for name, entry in catalogue.entries().items():
            tasks = set(catalogue._tasks(name, entry))
            joins = shared and all((catalogue.exercise, t) in self.reads for t in tasks)
            modules = set(entry.modules).union(*(self.reads[catalogue.exercise, t] for t in tasks if joins))
            run = next((r for r in self.runs if joins and r.fits(catalogue.exercise, entry.devices, tasks, modules)),
                       None)
            if run is None:
                run = _Run(catalogue.exercise, entry.devices, joins)
                self.runs.append(run)
            run.members.append((catalogue, name))
            run.tasks |= tasks
            run.modules |= modules
            self._of[id(catalogue), name] = run

    def report(self, catalogue: Catalogue, name: str) -> dict:
        if (id(catalogue), name) not in self._of:
            self._place(catalogue, shared=False)
        for run in self.runs:
            if run.graded is None and any(member is catalogue for member, _ in run.members):
                folder = Path(tempfile.mkdtemp(prefix=f"{run.exercise}-{catalogue.task}-", dir=_scratch))
                run.graded = _pool.submit(run.grade, folder / "submission")
        return self._of[id(catalogue), name].graded.result()


def _graded(exercise: str, modules: dict[str, str], tasks, devices: str, folder: Path) -> dict:
    """The JSON report of one ``grade`` run: the solutions with ``modules`` replaced, ``tasks`` at ``devices``."""
    build_submission(folder, modules, exercise=exercise)
    proc = run_grade(exercise, "--submission", str(folder), "--format", "json", "--seed", str(SEED),
                     *[arg for t in tasks for arg in ("--task", t)], "--devices", devices)
    assert proc.returncode == 0, f"grade exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return json.loads(proc.stdout)


def expect_mistake(graded: dict, test: str, words: tuple[str, ...], devices: set[int]) -> None:
    """``test`` of the task report ``graded`` fails exactly at ``devices`` with a message containing every
    one of ``words``; of a parametrised test only the failed cases naming ``words[0]`` count."""
    failed = [c for c in graded["cases"] if c["test"] == test and c["outcome"] != "passed" and words[0] in c["message"]]
    assert {c["devices"] for c in failed} == set(devices), (
        f"{test} should fail at {sorted(devices)} naming {words[0]!r}; failed cases: "
        f"{[(c['devices'], c['message']) for c in graded['cases'] if c['outcome'] != 'passed']}")
    for c in failed:
        missing = [w for w in words if w not in c["message"]]
        assert not missing, f"{test} at {c['devices']} devices does not say {missing}: {c['message']}"


def mutate(module: str, *edits: tuple[str, str], exercise: str = "exercise7") -> str:
    """solutions/<exercise>/<module>.py with each (old, new) edit applied; old must occur exactly once."""
    path = ROOT / "solutions" / exercise / f"{module}.py"
    return edited(path.read_text(), *edits, name=f"solutions/{exercise}/{module}.py")


def edited(source: str, *edits: tuple[str, str], name: str = "the source") -> str:
    """``source`` with each (old, new) edit applied in turn; old must occur exactly once."""
    for old, new in edits:
        assert source.count(old) == 1, f"{old!r} does not occur exactly once in {name}"
        source = source.replace(old, new)
    return source
