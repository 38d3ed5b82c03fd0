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
from release_helpers import EXERCISE, checked, copy_course, release

from classroom import source

WORKFLOW = Path(".github") / "workflows" / "classroom.yml"
REPORTER = "classroom-resources/autograding-grading-reporter@v1"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """The student bundle of the course cut to task dot at 1 device (every test visible)."""
    top = tmp_path_factory.mktemp("classroom")
    course = checked(copy_course(top / "course", devices=(1,), tasks=("dot",)))
    proc = release(course, top / "out")
    assert proc.returncode == 0, proc.stderr
    return top / "out" / "student"


def _expression(text: str, outputs: dict[str, dict[str, str]]) -> str:
    def value(match):
        step, name = re.fullmatch(r"\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*", match.group(1)).groups()
        return outputs[step][name]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _recorded_points(step: dict, outputs: dict) -> tuple[float, float, list[dict]]:
    """What the reporter records (src/notify-classroom.js): (points, out of, the runners' results)."""
    env = {key: _expression(value, outputs) for key, value in step["env"].items()}
    runners = [json.loads(base64.b64decode(env[f"{r.strip().upper()}_RESULTS"]))
               for r in step["with"]["runners"].split(",")]
    counted = [r for r in runners if r["max_score"]]
    return sum(t["score"] for r in counted for t in r["tests"]), sum(r["max_score"] for r in counted), runners


def logged_points(runner: dict) -> float:
    """What the reporter's log prints for a runner (src/helpers/test-helpers.js, getTestScore): the share of
    its tests whose status is "pass", times its max_score."""
    return sum(t["status"] == "pass" for t in runner["tests"]) / len(runner["tests"]) * (runner["max_score"] or 0)


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
    total, out_of, runners = run_workflow(bundle, tmp_path, dot and source(dot))
    assert out_of == pytest.approx(15.0)
    assert sum(logged_points(r) for r in runners) == pytest.approx(total), "the log's total is the one recorded"
    tests = [t for r in runners for t in r["tests"]]
    for t in tests:  # a case scores the points its name says, or nothing
        said = float(re.search(r"\(([\d.]+) points?\)$", t["name"])[1])
        assert t["score"] == (pytest.approx(said, abs=0.005) if t["status"] == "pass" else 0.0), t
    if points is None:  # right values, no collective: the structure test fails, the value tests pass
        assert 0 < total < 15 and any(r["status"] == "fail" for r in runners)
        assert any("all-reduce" in t["message"] for t in tests if t["status"] == "fail")
    else:
        assert total == pytest.approx(points)
        assert all(r["status"] == ("pass" if points else "fail") for r in runners)



# The reporter's own src/ (MIT, classroom-resources/autograding-grading-reporter at 43c2d9f, its LICENSE.md beside
# it), kept with the tests so they run it wherever node is installed; CLASSROOM_REPORTER points at another checkout.
REPORTER_SOURCE = os.environ.get("CLASSROOM_REPORTER") or os.path.join(os.path.dirname(__file__), "classroom_reporter")
SHIMS = {  # the two packages its src/ requires, reduced to what it calls (its dist/ bundles the real ones)
    "@actions/core/index.js": """
        exports.getInput = (name) => process.env[`INPUT_${name.toUpperCase()}`] || "";
        exports.notice = (text, props) => console.log(`::notice title=${props.title}::${text}`);
        exports.setFailed = (message) => { console.log(`::error::${message}`); process.exitCode = 1; };
        """,
    "cli-table3/index.js": """
        module.exports = class Table {
          constructor() { this.rows = []; }
          push(row) { this.rows.push(row); }
          toString() { return this.rows.map((row) => "| " + row.join(" | ")).join("\\n"); }
        };
        """,
}


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed (.ci/run installs it where it can)")
def test_the_reporters_own_javascript_prints_the_total_classroom_records(bundle, tmp_path):
    """The reporter's src/main.js run with node on a partial answer's runners: its log's "Total:" row and
    "Total points for" lines agree with the points it sends GitHub Classroom (its "Autograding report")."""
    total, out_of, runners = run_workflow(bundle, tmp_path, source("partial"))
    for path, text in SHIMS.items():
        (tmp_path / "node_modules" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "node_modules" / path).write_text(text)
    flow = yaml.safe_load((bundle / WORKFLOW).read_text())
    names = next(s for s in flow["jobs"]["run-autograding-tests"]["steps"] if s.get("uses") == REPORTER)["with"]["runners"]
    env = {**os.environ, "NODE_PATH": str(tmp_path / "node_modules"), "INPUT_RUNNERS": names,
           **{f"{name.upper()}_RESULTS": base64.b64encode(json.dumps(r).encode()).decode()
              for name, r in zip(names.split(","), runners)}}
    proc = subprocess.run(["node", os.path.join(REPORTER_SOURCE, "src", "main.js")], env=env, capture_output=True,
                          text=True, timeout=60)
    recorded = json.loads(re.search(r"::notice title=Autograding report::(.*)", proc.stdout)[1])
    assert recorded == {"totalPoints": pytest.approx(total), "maxPoints": pytest.approx(out_of)}, proc.stdout
    logged = float(re.search(r"\| Total: +\| ([\d.e+-]+) \|", proc.stdout)[1])
    assert logged == pytest.approx(recorded["totalPoints"]), proc.stdout
    per_runner = [float(x) for x in re.findall(r"Total points for \w+: ([\d.]+)/", proc.stdout)]
    assert sum(per_runner) == pytest.approx(recorded["totalPoints"], abs=0.01 * len(per_runner))
    assert "::error::Some tests failed." in proc.stdout  # the job fails, as a partial answer should
