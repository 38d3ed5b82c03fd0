"""run_autograder end to end, in a copy of Gradescope's /autograder layout under tmp_path.

As Gradescope does: autograder.zip unpacked into ROOT/source, run_autograder copied to ROOT and run
from there, the submission in ROOT/submission; results.json must follow Gradescope's documented
format (gradescope_schema) and score a solution full and a stub zero.
"""

from __future__ import annotations

import codecs
import json

import pytest
from conftest import ROOT
from release_helpers import EXERCISE, release_with_a_hidden_test, run_autograder

from grader.course import find_course


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """(autograder.zip, the hidden test's name, full marks with extra credit) for a course copy at 1, 2 devices,
    cut to its first task and dot: the layout, not the course, is under test (`grade check` grades it all)."""
    done = release_with_a_hidden_test(tmp_path_factory.mktemp("release"), tasks=("dot",))
    max_points = sum(t.points for t in find_course(explicit=str(done["course"])).exercise(EXERCISE).tasks)
    return done["out"] / "autograder.zip", done["hidden"], max_points


def _modules(base: str, prefix: str = "", transform=lambda b: b) -> dict[str, bytes]:
    return {prefix + p.name: transform(p.read_bytes()) for p in (ROOT / base / EXERCISE).glob("*.py")}


def test_a_solution_scores_full(autograder, tmp_path):
    archive, hidden, max_points = autograder
    results = run_autograder(archive, tmp_path, _modules("solutions"))
    assert results["score"] == pytest.approx(max_points)
    assert all(t["status"] == "passed" for t in results["tests"]), results["tests"]
    assert sum(t["score"] for t in results["tests"]) == pytest.approx(max_points)
    visibility = {t["name"].split(": ", 1)[1]: t["visibility"] for t in results["tests"]}
    assert visibility.pop(hidden) == "hidden" and set(visibility.values()) == {"visible"}


def test_a_stub_scores_zero(autograder, tmp_path):
    archive, _, _ = autograder
    results = run_autograder(archive, tmp_path, _modules("exercises"))
    assert results["score"] == 0
    assert all(t["status"] == "failed" and "NotImplementedError" in t["output"] for t in results["tests"])


def test_a_zipped_folder_of_windows_files_scores_full(autograder, tmp_path):
    archive, _, max_points = autograder
    files = _modules("solutions", "my_work/exercise7/", lambda b: codecs.BOM_UTF8 + b.replace(b"\n", b"\r\n"))
    files.update({"my_work/notes.txt": b"my notes", "__MACOSX/my_work/exercise7/._dot.py": b"\x00\x05\x16\x07"})
    results = run_autograder(archive, tmp_path, files)
    assert results["score"] == pytest.approx(max_points), results
    assert "graded the modules found in my_work/exercise7/" in results["output"]


def test_missing_modules_score_zero_with_a_reason(autograder, tmp_path):
    archive, _, _ = autograder
    results = run_autograder(archive, tmp_path, {"README.txt": b"I ran out of time"})
    assert results["score"] == 0
    assert all("is missing from your submission" in t["output"] for t in results["tests"]), results["tests"]


def test_a_submission_that_cannot_be_graded_still_gets_results(autograder, tmp_path):
    archive, _, _ = autograder
    results = run_autograder(archive, tmp_path, {f"copy{i}.py": b"x = 1\n" for i in range(300)})
    assert results["score"] == 0 and results["tests"] == []
    assert results["output"].startswith("This submission could not be graded: ") and "too large" in results["output"]


def test_a_notebook_of_the_solutions_scores_full(autograder, tmp_path):
    archive, _, max_points = autograder
    cells = [{"cell_type": "code", "id": p.stem, "metadata": {}, "execution_count": None, "outputs": [],
              "source": f"# grade: {p.stem}\n{p.read_text()}"} for p in (ROOT / "solutions" / EXERCISE).glob("*.py")]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    results = run_autograder(archive, tmp_path, {"work.ipynb": json.dumps(notebook).encode()})
    assert results["score"] == pytest.approx(max_points), results
