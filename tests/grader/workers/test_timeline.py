"""The run's timeline (GRADE_TIMELINE, bench/timeline.py) and the ordering it was made to check: the
zygote imports JAX while the grader imports pytest, and a clean worker warms up while the student's
calls run."""

import json
import subprocess
import sys

from conftest import ROOT, run_grade
from grader.workers import timeline


def test_a_timed_run_says_what_each_process_did_and_when(tmp_path):
    path = tmp_path / "timeline.json"
    proc = run_grade("exercise7", "--submission", str(ROOT / "solutions"), "--task", "dot", "--devices", "4",
                     "--format", "json", "--seed", "7", env={timeline.VARIABLE: str(path)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["score"] == json.loads(proc.stdout)["max_score"]
    spans = json.loads(path.read_text())["spans"]
    assert all(s["start"] <= s["end"] for s in spans)
    by = {}
    for s in spans:
        by.setdefault(s["process"], []).append(s)
    assert {"grader", "zygote", "worker 4 devices", "clean 4 devices"} <= set(by)

    def first(process, what):
        return next(s for s in by[process] if s["what"].startswith(what))

    pytest_import = first("grader", "import pytest")
    assert first("grader", "start the zygote")["end"] <= pytest_import["start"] < first("zygote", "import JAX")["end"]
    first_call = first("worker 4 devices", "call distributed_dot")
    warm, program = first("clean 4 devices", "warm up"), first("clean 4 devices", "run_program")
    assert first_call["end"] <= warm["start"] and warm["end"] <= program["start"]


def test_without_the_variable_nothing_is_kept(monkeypatch):
    monkeypatch.delenv(timeline.VARIABLE, raising=False)
    monkeypatch.setattr(timeline, "_spans", [])
    timeline.span("grader", "anything", 1.0, 2.0)
    assert timeline._spans == []


def test_what_a_worker_reports_is_drawn_only_where_it_is_a_number(monkeypatch, tmp_path):
    monkeypatch.setenv(timeline.VARIABLE, str(tmp_path / "t.json"))
    monkeypatch.setattr(timeline, "_spans", [])
    timeline.steps("worker 1 device", {"confine itself": "soon", "set up JAX": 5.0, "warm up": [1]}, pid=-1)
    timeline.reported("worker 1 device", "call f", "0", 1.0)
    timeline.reported("worker 1 device", "call g", 6.0, True)
    assert timeline._spans == [{"process": "worker 1 device", "what": "set up JAX", "start": 5.0, "end": 5.0}]


def test_the_grading_pipeline_leaves_pytest_to_be_imported_while_the_zygote_imports_jax():
    code = "import sys, grader.grading.pipeline; print('pytest' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_zygote_starts_before_the_grading_pipeline_is_imported(tmp_path):
    path = tmp_path / "timeline.json"
    proc = run_grade("exercise7", "--submission", str(ROOT / "solutions"), "--task", "dot", "--devices", "1,2",
                     "--format", "json", "--seed", "7", env={timeline.VARIABLE: str(path)})
    assert proc.returncode == 0, proc.stderr
    spans = json.loads(path.read_text())["spans"]
    grader = {s["what"]: s for s in spans if s["process"] == "grader"}
    zygotes = [s for s in spans if s["process"] == "zygote" and s["what"] == "start Python"]
    assert len(zygotes) == 1, "the run's workers came from the zygote started first (one environment)"
    pipeline = grader["import the grading pipeline"]
    assert grader["start the zygote first"]["end"] <= pipeline["start"]
    assert zygotes[0]["start"] <= pipeline["start"]


def test_starting_the_zygote_first_imports_neither_numpy_nor_the_pipeline():
    code = ("import sys, grader.cli, grader.grading.zygote_first; "
            "print('numpy' in sys.modules, 'grader.grading.pipeline' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
