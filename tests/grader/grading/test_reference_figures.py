"""A device's work is compared with the reference's program, whose figure is measured once and travels.

grader.suite.work compares the arithmetic one device of the student's program performs with what one
device of the course's reference performs, compiled the same way (grader.grading.reference_figures):
measured by a reference worker the first time, kept beside the course, marked complete by `grade
check`, carried into the autograder bundle by `grade release`, and a course error (never a student's
failure) where a bundle lacks one. One course of exercise 7's dot task at 2 devices serves every test.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, run_grade
from release_helpers import EXERCISE, copy_course, release, run_autograder
from grader.grading import reference_figures
from test_verdict_facts import SUBMISSIONS

# The whole dot product on every device, one slice at a time, and the psum the answer needs (verdict facts'):
# every pattern of a distributed dot, n times its work.
WHOLE_IN_SLICES = textwrap.dedent(SUBMISSIONS["dot_whole_in_chunks"])
STRUCTURAL = "test_dot_uses_one_all_reduce"


def dot_course(dest: Path) -> Path:
    """The course cut to exercise 7's dot task at 2 devices."""
    return copy_course(dest, devices=(2,), tasks=("dot",))


def kept(course: Path) -> list[Path]:
    return sorted(p for p in (course / ".grade" / "reference-figures" / EXERCISE).glob("*/*.json")
                  if not p.name.endswith(reference_figures.TRACED))


def structural_case(course: Path, submission: Path) -> dict:
    proc = run_grade(EXERCISE, "--course", str(course), "--submission", str(submission), "--format", "json",
                     "--seed", "3")
    assert proc.returncode in (0, 1), proc.stderr
    (task,) = json.loads(proc.stdout)["tasks"]
    (case,) = [c for c in task["cases"] if c["test"] == STRUCTURAL]
    return case


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The dot task at 2 devices, after a `grade check` that passed."""
    root = dot_course(tmp_path_factory.mktemp("figures") / "course")
    proc = run_grade("check", EXERCISE, "--course", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / EXERCISE).mkdir()
    (folder / EXERCISE / "dot.py").write_text(WHOLE_IN_SLICES)
    return folder


def test_the_figure_is_measured_once_kept_and_is_what_the_work_is_compared_with(course, hostile, tmp_path):
    figures = kept(course)
    assert figures and (figures[0].parent / "checked").is_file()  # grade check measured them and marked them whole
    before = {p: p.read_text() for p in figures}
    case = structural_case(course, hostile)
    assert case["outcome"] == "failed", case
    assert "times the reference's (about the whole computation's work, done on every device)" in case["message"]
    assert {p: p.read_text() for p in kept(course)} == before  # read, not measured again
    (shown,) = [note for note in case["feedback"] if note["kind"] == "communication"]
    assert shown["reference"] == ["1 all-reduce (psum) of 4 bytes per device",  # the reference's own program, measured
                                  "1 all-reduce (added by XLA for squeeze) of 4 bytes per device"]
    for path in figures:  # a reference that did this much work per device (holding the inputs whole, as the
        # program computing on them outside its pmap does) would let the same program through where the work is
        # compared with it (405 elements); below that each device's share is held to its slice, not to the figure
        kept_figure = json.loads(before[path])
        held = [[name, 1.0, how] for name, _, how in kept_figure["held"]]
        path.write_text(json.dumps(dict(kept_figure, operations=10 ** 9, held=held)))
    try:
        again = structural_case(course, hostile)
        assert again["outcome"] == "failed" and again["message"].startswith("in distributed_dot with len "), again
    finally:
        for path, text in before.items():
            path.write_text(text)


def test_a_kept_figure_without_the_collectives_is_measured_again(course, hostile):
    """The case fails on its first program (405 elements), so the figure it read is measured again, and the
    figures of the value tests' lengths, which it never reached, stay as they were left."""
    figures = kept(course)
    before = {p: p.read_text() for p in figures}
    partial = {p: {"operations": json.loads(before[p])["operations"]} for p in figures}
    for path in figures:  # as a grader that kept only the operation count wrote them
        path.write_text(json.dumps(partial[path]))
    try:
        case = structural_case(course, hostile)
        assert case["outcome"] == "failed" and "times the reference's" in case["message"], case
        now = {p: json.loads(p.read_text()) for p in figures}
        measured = [p for p in figures if now[p] == json.loads(before[p])]
        assert len(measured) == 1 and all(now[p] == partial[p] for p in figures if p not in measured), now
    finally:
        for path, text in before.items():
            path.write_text(text)


def test_release_carries_the_figures_and_the_autograder_compares_with_them(course, tmp_path):
    proc = release(course, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    count = len(kept(course))
    assert f"and {count} figure{'s' if count != 1 else ''} of the reference's programs" in proc.stdout
    assert "grade check passed" in proc.stdout and "no `grade check" not in proc.stderr
    results = run_autograder(tmp_path / "out" / "autograder.zip", tmp_path / "gradescope",
                             {"dot.py": WHOLE_IN_SLICES.encode()})
    (case,) = [t for t in results["tests"] if STRUCTURAL in t["name"]]
    assert case["status"] == "failed" and "times the reference's" in case["output"], case


def test_a_bundle_without_the_figure_is_the_courses_error_and_release_says_so(course, tmp_path):
    changed = dot_course(tmp_path / "course")
    dot = changed / "solutions" / EXERCISE / "dot.py"
    dot.write_text(dot.read_text() + "\n# edited since the last check\n")  # a new digest: no figure kept for it
    proc = release(changed, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "and 0 figures of the reference's programs" in proc.stdout
    assert f"no `grade check {EXERCISE}` has passed since its solutions or probes last changed" in proc.stderr
    files = {p.name: p.read_bytes() for p in (ROOT / "solutions" / EXERCISE).glob("dot.py")}
    results = run_autograder(tmp_path / "out" / "autograder.zip", tmp_path / "gradescope", files)
    assert results["score"] == 0 and "The autograder itself failed" in results["output"], results


# The reference solution's dot, wrong whenever the student's process could read the copy of the reference
# the workspace holds beside its scratch.
READS_THE_REFERENCE = (ROOT / "solutions" / EXERCISE / "dot.py").read_text() + textwrap.dedent('''

    def _readable(path):
        try:
            with open(path) as f:
                return bool(f.read())
        except OSError:
            return False


    if _readable("../reference/dot.py"):
        distributed_dot = lambda x, y: 0 * x[0]  # noqa: E731
    ''')


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of the worker's own needs a grader running as root")
def test_a_students_worker_cannot_read_the_reference_copy_even_without_landlock(course, tmp_path):
    (tmp_path / EXERCISE).mkdir()
    (tmp_path / EXERCISE / "dot.py").write_text(READS_THE_REFERENCE)
    proc = run_grade(EXERCISE, "--course", str(course), "--submission", str(tmp_path), "--format", "json",
                     env={"GRADE_SANDBOX": "landlock"})  # files readable only by the grader's uid keep it out
    assert proc.returncode == 0, proc.stderr
    (task,) = json.loads(proc.stdout)["tasks"]
    assert task["score"] == task["max_score"], task["cases"]
    assert "uid" in json.loads(proc.stdout)["sandbox"]["held"]
