"""Submissions whose code is unusually alike, found with copydetect (the winnowing algorithm MOSS uses).

Each submission's task modules (the names of the stubs) are copied into ``scratch/<student>/``, read
the way grading reads them (UTF-8, LF line ends), archives unpacked with the batch's checks, a
notebook's marked cells taken as the modules they name (:mod:`grader.notebook.cells`). Each
module is compared with the same module of every other student; code the stubs already give (their
signatures and docstrings) is boilerplate and never counts as shared, so two untouched stubs are not
"alike". Tokens are normalised first (names become V, F, O; strings S), so renaming variables does
not hide a copy. It only flags: a pair above the threshold is for a person to look at, side by side
in copydetect's HTML report, and no grade is touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

from grader.classroom import intake, roster, unpack
from grader.errors import UsageError
from grader.grading import sanitise
from grader.notebook.cells import as_folder
from grader.submission import expected_modules, locate, python_source

# copydetect's thresholds are in tokens after normalisation: a student's function for one task is
# short, so matches count from 10 tokens on (copydetect's default, 25, misses whole task solutions).
NOISE_TOKENS, GUARANTEE_TOKENS = 10, 12


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    module: str
    first_share: float  # of the first's module found in the second's
    second_share: float

    @property
    def share(self) -> float:
        return max(self.first_share, self.second_share)


def _collect(entry: roster.Entry, exercise: str, modules: tuple[str, ...], dest: str, scratch: str) -> str:
    """Copy one submission's task modules to ``dest``; returns why it was left out, or ""."""
    single = len(entry.paths) == 1 and roster.kind(entry.paths[0])
    if not (single or entry.files and len(entry.files) == len(entry.paths)):
        return "not one folder, archive or LMS download"
    gone = [p for p in entry.paths if not os.path.exists(p)]
    if gone:
        return f"{gone[0]} is no longer there"
    try:
        os.makedirs(scratch)
        path = intake.open_submission(entry, scratch, exercise)
    except unpack.Refused as exc:
        return str(exc)
    try:
        with as_folder(path, modules) as (folder, _):
            return _copy_modules(locate(folder, exercise, modules), modules, dest)
    except UsageError as exc:  # a notebook whose cells do not make modules
        return str(exc)


def _copy_modules(folder: str, modules: tuple[str, ...], dest: str) -> str:
    found = 0
    for module in modules:
        source = os.path.join(folder, f"{module}.py")
        if os.path.isfile(source):
            os.makedirs(dest, exist_ok=True)
            with open(source, "rb") as f, open(os.path.join(dest, f"{module}.py"), "wb") as out:
                out.write(python_source(f.read()))
            found += 1
    return "" if found else "no task modules"


def _name_files_by_student(html_path: str, code: str, students: dict[str, str]) -> None:
    """copydetect names files by their scratch path (``code/s3/dot.py``), which means nothing once
    the scratch is gone; the report names them ``student/dot.py`` instead, the id escaped, since a
    student id is a file name a student may have chosen."""
    with open(html_path, encoding="utf-8") as f:
        text = f.read()
    for alias, student in students.items():
        text = text.replace(os.path.join(code, alias) + os.sep, sanitise.html(student) + "/")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(text)


def compare(entries: list[roster.Entry], exercise: str, stubs: str, threshold: float,
            html_path: str | None) -> tuple[list[Pair], dict[str, str]]:
    """(pairs above ``threshold``, most alike first; {student: why left out}); writes the HTML report."""
    try:
        from copydetect import CopyDetector
    except ImportError:
        raise UsageError("grade similar needs copydetect: pip install -e '.[similarity]'") from None
    modules = expected_modules(stubs)
    if not modules:
        raise UsageError(f"no stubs in {stubs}: grade similar compares the modules the stubs name")
    scratch = tempfile.mkdtemp(prefix="grade-similar-")
    try:
        code = os.path.join(scratch, "code")
        skipped, students = {}, {}  # folders are named by alias: an id need not be a safe file name
        for index, entry in enumerate(entries):
            alias = f"s{index}"
            why = _collect(entry, exercise, modules, os.path.join(code, alias), os.path.join(scratch, alias))
            if why:
                skipped[entry.student] = why
            else:
                students[alias] = entry.student
        if len(entries) - len(skipped) < 2:
            raise UsageError("grade similar needs at least two submissions with task modules")
        detector = CopyDetector(test_dirs=[code], ref_dirs=[code], boilerplate_dirs=[stubs], extensions=["py"],
                                noise_t=NOISE_TOKENS, guarantee_t=GUARANTEE_TOKENS, display_t=threshold,
                                same_name_only=True, ignore_leaf=True, autoopen=False, silent=True,
                                out_file=html_path or os.path.join(scratch, "report.html"))
        detector.run()
        pairs = []
        for first_share, second_share, first, second, *_ in detector.get_copied_code_list():
            (a, module), (b, _) = (os.path.relpath(p, code).split(os.sep) for p in (first, second))
            a, b = students[a], students[b]
            shares = {a: round(float(first_share), 3), b: round(float(second_share), 3)}
            a, b = sorted((a, b))
            pairs.append(Pair(a, b, module.removesuffix(".py"), shares[a], shares[b]))
        if html_path:
            detector.generate_html_report()
            _name_files_by_student(html_path, code, students)
        return sorted(pairs, key=lambda p: (-p.share, p.first, p.second, p.module)), skipped
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
