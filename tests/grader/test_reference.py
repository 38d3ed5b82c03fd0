"""The course is sound: reference solutions score full marks at every configured device count, stubs zero."""

from __future__ import annotations

from conftest import ROOT, grade_json

from grader.course import load_course


def test_solutions_full_marks_at_every_configured_device_count():
    course = load_course(str(ROOT / "course.yaml"))
    report = grade_json(ROOT / "solutions")
    for t in report["tasks"]:
        rubric = course.exercise("exercise7").task(t["id"])
        configured = {(None, d) for d in rubric.devices} | {(lay.processes, lay.devices) for lay in rubric.processes}
        failing = [f"{c['test']}[{c['devices']}]: {c['message']}" for c in t["cases"] if c["outcome"] != "passed"]
        assert not failing, f"{t['id']}: {failing}"
        assert {(c["processes"], c["devices"]) for c in t["cases"]} == configured, t["id"]
        assert t["score"] == t["max_score"] > 0
    assert report["score"] >= report["max_score"]


def test_stubs_score_zero_and_are_not_started():
    report = grade_json(ROOT / "exercises")
    for t in report["tasks"]:
        assert t["score"] == 0, t["id"]
        assert t["status"] == "not started", (t["id"], t["reason"])
