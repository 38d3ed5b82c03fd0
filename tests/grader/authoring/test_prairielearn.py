"""The PrairieLearn question `grade release` writes, graded as PrairieLearn's external grader would:
the question's files copied into a scratch ``/grade`` (serverFilesCourse/, student/), the entrypoint
info.json names run there, and results.json read against the documented contract
(tests/grader/prairielearn_contract.py names the source)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prairielearn_contract import validate_info, validate_results
from release_helpers import EXERCISE, checked, copy_course, release

from classroom import source

HIDDEN = "test_dot_uses_one_all_reduce"


@pytest.fixture(scope="module")
def question(tmp_path_factory):
    top = tmp_path_factory.mktemp("prairielearn")
    course = checked(copy_course(top / "course", devices=(1,), hidden={"dot": [HIDDEN]}, tasks=("dot",)))
    proc = release(course, top / "out")
    assert proc.returncode == 0, proc.stderr
    return top / "out" / "prairielearn", proc.stdout


def grade_in_scratch(question_dir: Path, work: Path, student: dict[str, str], too_large: str = "") -> tuple[dict, str]:
    """Run the question's entrypoint as PrairieLearn does, in ``work`` standing for /grade; returns
    (results.json, its text). ``too_large`` names a file made larger than a
    submission may be."""
    info = json.loads((question_dir / "questions" / EXERCISE / "info.json").read_text())
    options = info["externalGradingOptions"]
    for folder in options["serverFilesCourse"]:
        shutil.copytree(question_dir / "serverFilesCourse" / folder, work / "serverFilesCourse" / folder)
    (work / "student").mkdir(parents=True)
    for name, text in student.items():
        (work / "student" / name).write_text(text)
    if too_large:
        with open(work / "student" / too_large, "wb") as f:
            f.truncate(17 << 20)  # sparse: costs no disk
    entry = work / os.path.relpath(options["entrypoint"], "/grade")
    env = {**os.environ, "PRAIRIELEARN_ROOT": str(work), "PRAIRIELEARN_PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(entry)], env=env, capture_output=True, text=True, timeout=600)
    assert (work / "results" / "results.json").exists(), proc.stdout + proc.stderr
    text = (work / "results" / "results.json").read_text()
    return json.loads(text), text


def test_the_question_enables_external_grading_as_documented(question):
    folder, stdout = question
    info = json.loads((folder / "questions" / EXERCISE / "info.json").read_text())
    assert validate_info(info) == []
    options = info["externalGradingOptions"]
    assert options["entrypoint"] == f"/grade/serverFilesCourse/{options['serverFilesCourse'][0]}run.sh"
    assert options["image"] in (folder / "Dockerfile").read_text()
    html = (folder / "questions" / EXERCISE / "question.html").read_text()
    assert '<pl-file-upload file-names="' in html and "dot.py" in html and "<pl-external-grader-results>" in html
    assert f"{folder}/: PrairieLearn question" in stdout.replace(os.sep, "/")


@pytest.mark.parametrize("dot, expect", [("correct", 1.0), ("partial", None), (None, 0.0)],
                         ids=["solution", "partial", "stub"])
def test_the_entrypoint_writes_results_prairielearn_reads(question, tmp_path, dot, expect):
    folder, _ = question
    stub = (Path(__file__).parents[3] / "exercises" / EXERCISE / "dot.py").read_text()
    results, text = grade_in_scratch(folder, tmp_path / "grade", {"dot.py": source(dot) if dot else stub})
    assert validate_results(text) == [], text
    assert results["gradable"] is True
    points, most = sum(t["points"] for t in results["tests"]), sum(t["max_points"] for t in results["tests"])
    assert results["score"] == pytest.approx(points / most, abs=1e-5), "the tests' points over their maximum"
    if expect is None:
        assert 0 < results["score"] < 1
    else:
        assert results["score"] == pytest.approx(expect)
    hidden = [t for t in results["tests"] if t["name"] == "dot: hidden test"]
    assert len(hidden) == 1 and hidden[0]["output"] == "" and HIDDEN not in text


def test_a_submission_that_cannot_be_graded_is_not_gradable_and_says_why(question, tmp_path):
    folder, _ = question
    results, text = grade_in_scratch(folder, tmp_path / "grade", {"dot.py": ""}, too_large="ring.py")
    assert validate_results(text) == []
    assert results["gradable"] is False and "score" not in results
    assert results["format_errors"] and results["format_errors"][0].startswith("This submission could not be graded")
