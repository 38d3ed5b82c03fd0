"""Stand-in for the batched catalogue harness (Catalogue, Right, Wrong, mutate) while it lands in catalogue.py.

Exercise 8's catalogues are data in the harness's shape; this grades each entry with its own `grade`
run. Delete this file when catalogue.py provides the four names, and import them from there.
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from conftest import ROOT, grade_json, task


def mutate(module: str, *edits: tuple[str, str], exercise: str) -> str:
    """solutions/<exercise>/<module>.py with each (old, new) edit applied; old must occur exactly once."""
    source = (ROOT / "solutions" / exercise / f"{module}.py").read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"{old!r} does not occur exactly once in solutions/{exercise}/{module}.py"
        source = source.replace(old, new)
    return source


@dataclass(frozen=True)
class Wrong:
    modules: dict[str, str]
    devices: str
    says: tuple[str, ...]
    never: tuple[str, ...] = ()
    fails: dict[str, set[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Right:
    modules: dict[str, str]
    devices: str


@dataclass(frozen=True)
class Catalogue:
    exercise: str
    task: str
    intact: str
    wrong: dict[str, Wrong]
    right: dict[str, Right]

    def _grade(self, modules: dict[str, str], devices: str, *tasks: str) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            submission = Path(folder) / self.exercise
            shutil.copytree(ROOT / "solutions" / self.exercise, submission,
                            ignore=shutil.ignore_patterns("__pycache__"))
            for name, source in modules.items():
                (submission / f"{name}.py").write_text(textwrap.dedent(source))
            args = [arg for t in tasks for arg in ("--task", t)]
            return grade_json(folder, *args, "--devices", devices, exercise=self.exercise)

    def expect_caught(self, name: str) -> None:
        wrong = self.wrong[name]
        report = self._grade(wrong.modules, wrong.devices, self.task, self.intact)
        lost, kept = task(report, self.task), task(report, self.intact)
        assert lost["score"] < lost["max_score"], f"{name}: {self.task} kept full points"
        missing = [w for w in wrong.says if w not in lost["reason"]]
        assert not missing, f"{name}: the reason does not say {missing}: {lost['reason']}"
        failed = [c for c in lost["cases"] if c["outcome"] != "passed"]
        for c in failed:
            said = [w for w in wrong.never if w in c["message"]]
            assert not said, f"{name}: {c['test']} at {c['devices']} devices says {said}: {c['message']}"
        for test, devices in wrong.fails.items():
            got = {c["devices"] for c in failed if c["test"] == test}
            assert got == devices, f"{name}: {test} should fail at exactly {sorted(devices)}, fails at {sorted(got)}"
        assert kept["score"] == kept["max_score"], f"{name}: {self.intact} lost points: {kept['reason']}"

    def expect_full_marks(self, name: str) -> None:
        right = self.right[name]
        graded = task(self._grade(right.modules, right.devices, self.task), self.task)
        assert graded["score"] == graded["max_score"], f"{name}: {graded['reason']}"
