"""grader.gradescope: report dict -> results.json, checked against Gradescope's documented format."""

from __future__ import annotations

import json

import pytest
from gradescope_schema import validate

from grader.grading import gradescope

DOC_EXAMPLE = {  # the example of Gradescope's "Output format" section, less its comments
    "score": 44.0, "execution_time": 136, "output": "Text relevant to the entire submission",
    "output_format": "simple_format", "test_output_format": "text", "test_name_format": "text",
    "visibility": "after_due_date", "stdout_visibility": "visible", "extra_data": {},
    "tests": [{"score": 2.0, "max_score": 2.0, "status": "passed", "name": "Your name here", "name_format": "text",
               "number": "1.1", "output": "Giant multiline string", "output_format": "text",
               "tags": ["tag1", "tag2", "tag3"], "visibility": "visible", "extra_data": {}}],
    "leaderboard": [{"name": "Accuracy", "value": .926}, {"name": "Time", "value": 15.1, "order": "asc"},
                    {"name": "Stars", "value": "*****"}],
}


def _case(test, devices, outcome, weight=1.0, visibility="visible", message="", where=None):
    return {"test": test, "devices": devices, "outcome": outcome, "kind": "" if outcome == "passed" else "wrong",
            "message": message, "where": where, "weight": weight, "visibility": visibility, "duration_s": 0.1}


def _report(cases, points=20.0, score=None):
    total_w = sum(c["weight"] for c in cases if c["outcome"] != "skipped")
    passed_w = sum(c["weight"] for c in cases if c["outcome"] == "passed")
    task_score = points * passed_w / total_w if score is None else score
    return {"schema": "pmap-course/report", "schema_version": 1, "grader_version": "0.1.0", "course": "c",
            "exercise": "ex", "submission": "/s", "seed": 7, "backend": "cpu", "jax_version": "0.10.2",
            "score": task_score, "max_score": points, "percent": 100 * task_score / points,
            "tasks": [{"id": "t", "title": "T", "score": task_score, "max_score": points, "extra_credit": False,
                       "status": "partial", "reason": "", "hint": "think again", "cases": cases}],
            "timing": {"wall_s": 3.4, "worker_s": 1.0}, "student_output": {}, "notes": ["a note"]}


def test_the_documented_example_validates():
    assert validate(DOC_EXAMPLE) == []


@pytest.mark.parametrize("change, complaint", [
    ({"visibility": "secret"}, "results.visibility"),
    ({"stdout_visibility": "yes"}, "results.stdout_visibility"),
    ({"score": "44"}, "results.score"),
    ({"score": float("nan")}, "results.score"),
    ({"tests": [{"score": 1, "status": "ok"}]}, "results.tests[0].status"),
    ({"tests": [{"score": 1, "visibility": "public"}]}, "results.tests[0].visibility"),
    ({"tests": [{"score": 1, "max": 2}]}, "results.tests[0].max"),
    ({"tests": [{"score": 1, "tags": "a"}]}, "results.tests[0].tags"),
    ({"grade": 3}, "results.grade"),
    ({"output_format": "rtf"}, "results.output_format"),
])
def test_the_schema_check_catches_what_the_documentation_rules_out(change, complaint):
    problems = validate({**DOC_EXAMPLE, **change})
    assert problems and all(p.startswith(complaint) for p in problems), problems


def test_a_score_is_needed_somewhere():
    assert validate({"tests": [{"name": "x"}]}) == ["results: a score is required at the top level or on every test"]
    assert validate({"tests": [{"score": 1.0}]}) == []


def test_tests_sum_to_the_task_and_keep_their_visibility():
    cases = [_case("test_a", 1, "passed"), _case("test_a", 2, "failed", message="wrong shape", where="m.py:3"),
             _case("test_b", 1, "passed", weight=2, visibility="hidden"),
             _case("test_b", 2, "passed", weight=2, visibility="hidden")]
    report = _report(cases)
    results = gradescope.results(report)
    assert validate(results) == []
    assert json.loads(json.dumps(results)) == results
    tests = {t["name"]: t for t in results["tests"]}
    assert set(tests) == {"t: test_a", "t: test_b"}
    assert sum(t["score"] for t in tests.values()) == pytest.approx(report["tasks"][0]["score"])
    assert sum(t["max_score"] for t in tests.values()) == pytest.approx(report["tasks"][0]["max_score"])
    assert tests["t: test_a"]["score"] == pytest.approx(20 * 1 / 6)
    assert tests["t: test_b"]["visibility"] == "hidden" and tests["t: test_a"]["visibility"] == "visible"
    assert tests["t: test_a"]["status"] == "failed" and tests["t: test_b"]["status"] == "passed"
    assert "[2 devices] wrong shape (m.py:3)" in tests["t: test_a"]["output"]
    assert "hint: think again" in tests["t: test_a"]["output"]
    assert results["score"] == report["score"] and results["stdout_visibility"] == "hidden"


def test_the_summary_names_no_reason_so_hidden_failures_stay_hidden():
    cases = [_case("test_secret", 1, "failed", visibility="hidden", message="the secret check failed")]
    results = gradescope.results(_report(cases))
    assert "secret check" not in results["output"] and "a note" in results["output"]
    assert results["tests"][0]["visibility"] == "hidden"


def test_one_reason_at_many_device_counts_is_said_once():
    cases = [_case("test_a", n, "failed", message="timed out after 30 s") for n in (1, 2, 4)]
    output = gradescope.results(_report(cases))["tests"][0]["output"]
    assert output.count("timed out") == 1 and "[1, 2, 4 devices]" in output


def test_cases_not_run_here_count_on_neither_side():
    cases = [_case("test_a", 1, "passed"), _case("test_gpu", 8, "skipped", message="needs 8 devices")]
    results = gradescope.results(_report(cases))
    skipped = next(t for t in results["tests"] if t["name"] == "t: test_gpu")
    assert skipped["max_score"] == 0 and "status" not in skipped and "needs 8 devices" in skipped["output"]
    assert validate(results) == []


def test_failure_results_validate():
    results = gradescope.failure_results("This submission could not be graded: it is empty")
    assert validate(results) == [] and results["score"] == 0 and results["output_format"] == "text"


MOMENTS = {  # what a student sees at each moment, per the specification's "visibility" of a test
    "before the due date": {"visible"},
    "after the due date": {"visible", "after_due_date"},
    "after publishing": {"visible", "after_due_date", "after_published"},
}


def student_view(results: dict, moment: str) -> tuple[str, list[dict]]:
    """(the top-level output, the tests) as Gradescope shows them to a student at ``moment``: the top-level
    output at the results' own visibility ("visible" here), each test at its own; "hidden" never."""
    assert results.get("visibility", "visible") == "visible"
    return results["output"], [t for t in results["tests"] if t.get("visibility", "visible") in MOMENTS[moment]]


def _numbers(text: str) -> set[float]:
    import re

    return {float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)}


def _two_tasks():
    dot = [_case("test_dot_visible", 1, "passed", message=""), _case("test_dot_visible", 2, "failed", message="off"),
           _case("test_dot_later", 1, "failed", visibility="after_due_date", message="secret reason 1"),
           _case("test_dot_published", 1, "passed", weight=2, visibility="after_published"),
           _case("test_dot_hidden", 1, "failed", weight=3, visibility="hidden", message="secret reason 2")]
    ring = [_case("test_ring_hidden", 1, "passed", weight=2, visibility="hidden")]
    report = _report(dot, points=15.0)
    ring_task = {**report["tasks"][0], "id": "ring", "max_score": 5.0, "score": 5.0, "cases": ring}
    report["tasks"].append(ring_task)
    report["score"], report["max_score"] = report["tasks"][0]["score"] + 5.0, 20.0
    report["late"] = {"days_late": 1, "penalty_percent": 10.0, "raw_score": report["score"],
                      "score": round(report["score"] * 0.9, 4)}
    return report


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_student_sees_only_what_visible_tests_earned_while_any_test_is_not_visible(moment):
    """dot: 15 points over 8 weighted cases, of which the visible pass earned 1.875 of 3.75; ring: 5 points,
    all hidden. The output may say 1.875 of 3.75, never dot's 5.625, ring's 5, the total or the points
    the late penalty took."""
    report = _two_tasks()
    results = gradescope.results(report)
    assert validate(results) == []
    output, shown = student_view(results, moment)
    earned = sum(t["score"] for t in results["tests"] if t["visibility"] == "visible")
    possible = sum(t["max_score"] for t in results["tests"] if t["visibility"] == "visible")
    assert f"the visible tests earned {earned:g} of their {possible:g} points" in output
    dot, ring = report["tasks"]
    secrets = {round(x, 2) for x in (report["score"], report["max_score"], report["late"]["score"], dot["score"],
                                     dot["max_score"], ring["score"], report["late"]["raw_score"])}
    assert not {round(x, 2) for x in _numbers(output)} & secrets, output
    assert "ring" not in output and "secret reason" not in output
    assert "10% off of the total" in output
    for test in shown:
        assert "secret reason" not in test["output"] or test["visibility"] != "visible"
    assert {t["name"] for t in shown} >= {"t: test_dot_visible"} and "t: test_dot_hidden" not in {
        t["name"] for t in shown}


def test_with_every_test_visible_the_output_gives_the_totals_and_the_late_points():
    report = _two_tasks()
    for task in report["tasks"]:
        task["cases"] = [dict(c, visibility="visible") for c in task["cases"]]
    output = gradescope.results(report)["output"]
    assert f"ex: {report['score']:g} / 20 points" in output and "ring: 5 / 5" in output
    assert f"{report['late']['raw_score']:g} -> {report['late']['score']:g} points" in output
    assert gradescope.results(report)["score"] == report["late"]["score"]


def test_every_output_is_declared_plain_text():
    results = gradescope.results(_report([_case("test_a", 1, "failed", message="<b>dot</b><img src=x>")]))
    assert (results["output_format"], results["test_output_format"], results["test_name_format"]) == ("text",) * 3
    assert all(t["output_format"] == "text" and t["name_format"] == "text" for t in results["tests"])
    assert "<img src=x>" in results["tests"][0]["output"]  # shown as the characters it is, since the format is text


def test_extra_credit_in_the_visible_tests_is_said_apart_from_the_points_possible():
    report = _two_tasks()
    extra = {**report["tasks"][1], "id": "bonus", "extra_credit": True, "max_score": 3.0, "score": 3.0,
             "cases": [_case("test_bonus", 1, "passed")]}
    report["tasks"].append(extra)
    output = gradescope.results(report)["output"]
    assert "and 3 extra" in output.splitlines()[0] and "bonus: 3 extra-credit points in the visible tests" in output
