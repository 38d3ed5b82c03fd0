"""The reference program's figures a student's program is compared with, each computed once.

A structural point about splitting work ("each device computes on its share") is decided by comparing
the student's compiled program with the course's reference solution compiled the same way: same target,
same input shapes, same layout, same device count, in the same kind of clean worker
(grader.workers.pool.WorkerPool.reference_program). The figures compared, the arithmetic one device of
the reference performs (grader.suite.hlo.operations) and the collectives it runs (grader.suite.structure:
kind, devices, dimension, bytes per device, how often), depend only on those and on the reference's code,
so they are kept once measured:

- where the course's solutions are at hand (the instructor's repository, CI, ``grade batch``), in
  ``.grade/reference-figures/<exercise>/<digest>/`` beside course.yaml, where ``<digest>`` covers the
  solutions' files and the suite's probe modules: editing either starts a new folder. A missing figure
  is measured by a reference worker and written there by the grader (never by a worker). ``grade check``
  marks a folder ``checked`` once the solutions scored full marks at every device count, so that folder
  holds every figure the suite asks for;
- in a released bundle, which carries no solution, in ``reference-figures/<exercise>/``: ``grade
  release`` copies the checked folder into the autograder's and the student's (a course may make a
  structural test visible; a figure is a count of operations and a list of collectives, which reveal no
  code). A figure missing there is the course's error (GraderError naming what to run), never the
  student's.

Each figure's file name is a hash of what it depends on, the grader's own reading of HLO and the
way it exports and measures a program included (:data:`_READERS`), so a figure measured by an older
reading is never used; a kept file that lacks a figure now kept (written before it was) is measured
again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from collections.abc import Callable

import numpy as np

from grader.errors import GraderError
from grader.layout import Layout
from grader.protocol import ArraySpec
from grader.workers.pool import WorkerPool

KEPT = os.path.join(".grade", "reference-figures")  # under the course root, where the solutions are
RELEASED = "reference-figures"  # under a released autograder bundle's root
CHECKED = "checked"
_ENGINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What every figure depends on beside its key: the grader's reading of HLO, how a program is exported and
# what the clean worker measures of it.
_READERS = [os.path.join(_ENGINE, *parts) for parts in (
    ("suite", "hlo.py"), ("suite", "hlo_flow.py"), ("suite", "hlo_uniform.py"), ("suite", "hlo_platforms.py"),
    ("suite", "replica_groups.py"), ("suite", "meshes.py"), ("suite", "structure.py"), ("sandbox", "program_export.py"),
    ("sandbox", "program_as_written.py"), ("sandbox", "program_held.py"), ("sandbox", "program_outside.py"),
    ("sandbox", "traced_collectives.py"))]
FIGURES = ("operations", "products", "outside", "collectives", "held")  # what one kept file holds
TRACED = ".traced.json"  # the file name's end of a trace's collectives, kept beside the figures


def _files_digest(folders: list[tuple[str, Callable[[str], bool]]]) -> str:
    """A hash of the files of each folder that its rule keeps (name and bytes, in sorted order)."""
    h = hashlib.sha256()
    for folder, keep in folders:
        for parent, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(names):
                if keep(name):
                    path = os.path.join(parent, name)
                    h.update(os.path.relpath(path, folder).encode() + b"\0")
                    with open(path, "rb") as f:
                        h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]


def _is_probe(name: str) -> bool:
    return name.endswith(".py") and not name.startswith("test_") and name != "conftest.py"


def digest(solutions: str, suite: str) -> str:
    """What a kept folder's figures depend on beside each figure's own key: the solutions and the probes."""
    return _files_digest([(solutions, lambda name: name.endswith(".py")), (suite, _is_probe)])


def kept_folder(course_root: str, exercise: str, solutions: str, suite: str) -> str:
    return os.path.join(course_root, KEPT, exercise, digest(solutions, suite))


def released_folder(course_root: str, exercise: str) -> str:
    return os.path.join(course_root, RELEASED, exercise)


def _plain(value):
    """``value`` as JSON-ready data, an array by its dtype, shape and a hash of its bytes."""
    if isinstance(value, ArraySpec):
        return ["spec", list(value.shape), value.dtype]
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.ascontiguousarray(value)
        return ["array", array.dtype.str, list(array.shape), hashlib.sha256(array.tobytes()).hexdigest()]
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, *map(_plain, value)]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return repr(value)


@functools.cache
def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


@functools.cache
def _reader() -> str:
    """A hash of the files every figure depends on (:data:`_READERS`)."""
    h = hashlib.sha256()
    for path in _READERS:
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


class ReferenceFigures:
    """The figures of one exercise's reference programs for one grading run; nothing is read (the solutions'
    digest, a figure) until a test first compares a program, so a run without one pays nothing."""

    def __init__(self, where: Callable[[], str], can_measure: bool, pool: WorkerPool):
        """``where()``: the folder figures are kept in (:func:`kept_folder` or :func:`released_folder`);
        ``can_measure``: whether the run holds the reference (RunSettings.reference), else a figure
        missing from the folder is the course's error."""
        self._where, self.can_measure, self._pool = where, can_measure, pool
        self._traced: dict[str, dict | None] = {}  # path -> a trace read or measured in this run

    @functools.cached_property
    def folder(self) -> str:
        return self._where()

    def _key(self, layout: Layout, target: str, specs, kwargs, arrives) -> str:
        backend = self._pool.backend.placed(layout.devices, layout.processes)
        facts = [_reader(), _version("jax"), _version("jaxlib"), backend.name, backend.platform, backend.kind,
                 str(layout), target, _plain(specs), _plain(dict(kwargs)), _plain(arrives)]
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:32]

    def figure(self, layout: Layout, target: str, specs, inputs: tuple, kwargs, arrives, what: str,
               timeout_s: float | None) -> dict:
        """The figures of the reference's program for these inputs and this layout, kept or measured now and
        kept: ``operations``, the arithmetic one device performs (grader.suite.hlo.operations, None for a
        loop of unknown length), ``products``, the part of it in products (grader.suite.hlo.products),
        ``outside``, what one device performs of the arithmetic written outside the
        per-device computations (grader.suite.work.outside_per_device),
        ``collectives``, what it communicates (grader.suite.structure.plain), and
        ``held``, the share of each input one device's per-device computation receives
        (grader.sandbox.program_held)."""
        from grader.suite import hlo, structure, work

        path = os.path.join(self.folder, self._key(layout, target, specs, kwargs, arrives) + ".json")
        try:
            with open(path) as f:
                kept_figures = json.load(f)
            if isinstance(kept_figures, dict) and all(name in kept_figures for name in FIGURES):
                return kept_figures
        except (OSError, ValueError):
            pass
        if not self.can_measure:
            raise GraderError(f"this autograder holds no figure of the reference's program for {target} on {layout}, "
                              "to compare the student's with: run `grade check` on the course, then `grade release` "
                              "again, so the bundle carries every figure its hidden tests compare with")
        out = self._pool.reference_program(layout, target, specs, inputs, kwargs, what, timeout_s, arrives)
        text = out["hlo"]
        figures = {"operations": hlo.operations(text), "products": hlo.products(text),
                   "outside": work.outside_per_device(text, out["outside"], out["inside"]),
                   "collectives": structure.plain(structure.steps(text)), "held": out["held"]}
        _keep(path, figures)
        return figures

    def traced(self, layout: Layout, target: str, specs, kwargs, what: str, timeout_s: float | None) -> dict | None:
        """What the reference's function asks for, traced on ``specs`` with shard_map's replication check off
        (grader.sandbox.traced_collectives: collectives and per-device computations): what a failing student
        function is compared with, for its message. Kept like a figure (a trace, no compile, measured for every
        call and program a run makes where the reference is at hand, so ``grade check`` keeps them all); None
        where it is neither kept nor measurable: the message then goes without it. Read once per run."""
        path = os.path.join(self.folder, self._key(layout, target, specs, kwargs, None) + TRACED)
        if path not in self._traced:
            self._traced[path] = self._read_or_trace(path, layout, target, specs, kwargs, what, timeout_s)
        return self._traced[path]

    def _read_or_trace(self, path: str, layout: Layout, target: str, specs, kwargs, what: str,
                       timeout_s: float | None) -> dict | None:
        try:
            with open(path) as f:
                kept = json.load(f)
            if isinstance(kept, dict) and isinstance(kept.get("traced"), dict):
                return kept["traced"]
        except (OSError, ValueError):
            pass
        if not self.can_measure:
            return None
        found = self._pool.traced_collectives(layout, target, specs, kwargs, what, timeout_s, reference=True)
        if found is not None:
            _keep(path, {"traced": found})
        return found


def for_run(course_root: str, exercise: str, solutions: str | None, suite: str, pool: WorkerPool) -> ReferenceFigures:
    """The figures of a run of ``exercise``: kept beside the course where its ``solutions`` are (and measured
    there when missing), else those a release left in the bundle."""
    if solutions:
        return ReferenceFigures(functools.partial(kept_folder, course_root, exercise, solutions, suite), True, pool)
    return ReferenceFigures(functools.partial(released_folder, course_root, exercise), False, pool)


def _keep(path: str, data: dict) -> None:
    """Write ``data`` to ``path`` whole or not at all (parallel runs may write the same figure); a course
    folder this user cannot write only means the figure is measured again next time."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".part")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(temporary, path)
    except OSError:
        return


def mark_checked(folder: str) -> None:
    """``grade check`` found the solutions sound at every device count: ``folder`` holds every figure the suite
    asks for."""
    _keep(os.path.join(folder, CHECKED), {"checked": True})


def carry(folder: str, exercise: str, bundles: list[str]) -> tuple[int, bool]:
    """Copy the figures kept in ``folder`` (:func:`kept_folder` of the exercise's current solutions and probes)
    into each released bundle; returns (how many, whether ``grade check`` marked them complete)."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    for bundle in bundles:
        dest = released_folder(bundle, exercise)
        os.makedirs(dest, exist_ok=True)
        for name in names:
            shutil.copyfile(os.path.join(folder, name), os.path.join(dest, name))
    return len([n for n in names if not n.endswith(TRACED)]), os.path.isfile(os.path.join(folder, CHECKED))
