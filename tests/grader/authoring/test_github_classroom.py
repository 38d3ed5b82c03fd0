"""The GitHub Classroom template `grade release` writes: its workflow, run step by step on a solution, a
partial answer and a stub, and the points its grading reporter would record.

The workflow's ``run:`` steps are executed here in the student bundle (``pip install`` skipped: the
tests run installed), with ``$GITHUB_OUTPUT`` a file as on GitHub's runners. The reporter step is done
as classroom-resources/autograding-grading-reporter does it (src/main.js, src/notify-classroom.js): each
runner's result is read from ``<RUNNER>_RESULTS`` as base64 JSON, and the points recorded are the sum of
the tests' scores over the runners with a max_score.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from release_helpers import EXERCISE, copy_course, release

from classroom import source

WORKFLOW = Path(".github") / "workflows" / "classroom.yml"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The student bundle of the course cut to task dot at 1 device (every test visible)."""
    top = tmp_path_factory.mktemp("classroom")
    course = copy_course(top / "course", devices=(1,))
    rubric = yaml.safe_load((course / "course.yaml").read_text())
    rubric["exercises"][EXERCISE]["tasks"] = [t for t in rubric["exercises"][EXERCISE]["tasks"] if t["id"] == "dot"]
    (course / "course.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    proc = release(course, top / "out")
    assert proc.returncode == 0, proc.stderr
    return top / "out" / "student"


def _expression(text: str, outputs: dict[str, dict[str, str]]) -> str:
    def value(match):
        step, name = re.fullmatch(r"\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*", match.group(1)).groups()
        return outputs[step][name]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _recorded_points(step: dict, outputs: dict) -> tuple[float, float, list[dict]]:
    """What the reporter records: (points, out of, the runners' results)."""
    env = {key: _expression(value, outputs) for key, value in step["env"].items()}
    runners = [json.loads(base64.b64decode(env[f"{r.strip().upper()}_RESULTS"]))
               for r in step["with"]["runners"].split(",")]
    counted = [r for r in runners if r["max_score"]]
    return sum(t["score"] for r in counted for t in r["tests"]), sum(r["max_score"] for r in counted), runners


def run_workflow(bundle: Path, work: Path, dot: str | None) -> tuple[float, float, list[dict]]:
    """The workflow's steps in a copy of ``bundle`` whose dot.py is ``dot`` (the stub when None)."""
    repo = work / "repo"
    shutil.copytree(bundle, repo)
    if dot is not None:
        (repo / "exercises" / EXERCISE / "dot.py").write_text(dot)
    flow = yaml.safe_load((repo / WORKFLOW).read_text())
    job = flow["jobs"]["run-autograding-tests"]  # the check name the reporter looks the run up by
    outputs: dict[str, dict[str, str]] = {}
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    for step in job["steps"]:
        if step.get("uses") == REPORTER:
            return _recorded_points(step, outputs)
        if "run" not in step or step["run"].startswith("python -m pip install"):
            continue
        output_file = work / f"output-{len(outputs)}"
        output_file.write_text("")
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env={**env, "GITHUB_OUTPUT": str(output_file)},
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{step['run']}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        outputs[step.get("id", "")] = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
    raise AssertionError(f"the workflow has no {REPORTER} step")


def test_the_workflow_is_what_github_classroom_runs(bundle):
    flow = yaml.safe_load((bundle / WORKFLOW).read_text())
    assert flow["permissions"]["checks"] == "write"
    steps = flow["jobs"]["run-autograding-tests"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[1]["uses"].startswith("actions/setup-python@")
    assert steps[2]["run"] == "python -m pip install -r requirements.txt -e ."


@pytest.mark.parametrize("dot, points", [("correct", 15.0), ("partial", None), (None, 0.0)],
                         ids=["solution", "partial", "stub"])
def test_the_reporter_records_the_points_of_each_task(bundle, tmp_path, dot, points):
    total, out_of, (runner,) = run_workflow(bundle, tmp_path, dot and source(dot))
    assert out_of == 15.0
    (test,) = runner["tests"]
    if points is None:  # right values, no collective: the structure test fails, the value tests pass
        assert 0 < total < 15 and test["status"] == "fail" and runner["status"] == "fail"
        assert test["name"] == f"dot: {round(total, 2):g} / 15 points" and "all-reduce" in test["message"]
    else:
        assert total == points
        assert runner["status"] == test["status"] == ("pass" if points else "fail")

