"""An endless loop costs one time limit per task and layout, not one per case (issue 13), and a
student's own run uses the course's shorter local limit."""

from __future__ import annotations

import json

from conftest import run_grade
from hangcourse import make_course

LOCAL_S, FULL_S = 1.5, 4.0


def _report(proc, output):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(output.read_text())


def test_an_endless_loop_costs_one_limit_per_layout_and_cuts_the_rest_short(tmp_path):
    root = make_course(tmp_path / "course", timeout_s=FULL_S, local_timeout_s=LOCAL_S)
    proc = run_grade("ex1", "--course", str(root), "--devices", "1,2", "--seed", "3", "--format", "json",
                     "--output", str(tmp_path / "r.json"))
    report = _report(proc, tmp_path / "r.json")
    spin = next(t for t in report["tasks"] if t["id"] == "spin")
    # 3 tests x 2 layouts: at each layout the first times out, the other two are cut short with its reason.
    assert (spin["status"], spin["score"], spin["cut_short"]) == ("timed out", 0, 4)
    by_layout = {}
    for case in spin["cases"]:
        by_layout.setdefault(case["devices"], []).append(case)
    for devices, cases in by_layout.items():
        first, *rest = cases
        assert first["kind"] == "timeout" and not first["cut_short"]
        assert f"timed out after {LOCAL_S:g} s" in first["message"]
        assert all(c["cut_short"] and (c["kind"], c["message"]) == ("timeout", first["message"]) for c in rest)
        assert all(c["duration_s"] < 0.5 for c in rest), "a cut-short case must not run"
    assert {t["id"]: t["status"] for t in report["tasks"]} == {"fine": "passed", "spin": "timed out", "tail": "passed"}
    # What the loop cost, read from the cases the grader timed (the run's wall time moves with the machine's load).
    spent = sum(c["duration_s"] for c in spin["cases"])
    assert spent < len(by_layout) * (LOCAL_S + 1.0), f"the endless loop cost {spent:.1f} s, more than one limit a layout"
    assert any(f"the autograder allows {FULL_S:g} s" in note for note in report["notes"])


def test_text_report_counts_the_cases_cut_short(tmp_path):
    root = make_course(tmp_path / "course", timeout_s=FULL_S, local_timeout_s=LOCAL_S)
    proc = run_grade("ex1", "--course", str(root), "--task", "spin", "--devices", "1", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert "0/3 cases, 2 cut short after a time-out" in proc.stdout
    assert "note: calls are limited to 1.5 s when you grade your own exercises" in proc.stdout


def test_a_submission_graded_for_the_autograder_gets_the_full_limit(tmp_path):
    root = make_course(tmp_path / "course", timeout_s=FULL_S, local_timeout_s=LOCAL_S)
    proc = run_grade("ex1", "--course", str(root), "--submission", str(root / "exercises"), "--task", "spin",
                     "--devices", "1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    first = report["tasks"][0]["cases"][0]
    assert f"timed out after {FULL_S:g} s" in first["message"]
    assert not report["notes"], "the local-limit note is for a student's own run only"
