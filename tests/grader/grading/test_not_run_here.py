"""Cases a machine cannot run: left out of the score, the maximum scaled, and both said so."""

from grader import course
from grader.course import find_course
from grader.grading.case import Case
from grader.grading.report import points as report_points, to_text
from grader.grading.runner import RunResult
from grader.grading.scoring import Score, score_task
from grader.submission import Submission
from conftest import ROOT
from fake_machine import grade_on_a_machine_with

NOT_RUN = "not run here (needs 8 devices, this machine has 2)"


def _task(points=20.0, tests=None):
    return course.Task(id="dot", title="Dot", points=points, hint="psum once", devices=(1, 2, 8), timeout_s=30,
                files=("test_dot.py",), tests=tests or {})


def _case(test, devices, outcome, message=""):
    return Case(nodeid=f"{test}[{devices}]", test=test, task="dot", devices=devices, outcome=outcome,
                kind="not_run" if outcome == "skipped" else ("wrong" if outcome == "failed" else ""), message=message)


def test_not_run_cases_lower_the_maximum_by_their_weight():
    cases = [_case("t", 1, "passed"), _case("t", 2, "passed"), _case("t", 8, "skipped", NOT_RUN)]
    ts = score_task(_task(), cases)
    assert ts.status == "passed"
    assert (ts.score, ts.max_score) == (round(20 * 2 / 3, 4), round(20 * 2 / 3, 4))
    assert [c.message for c in ts.not_run] == [NOT_RUN]


def test_a_failure_still_costs_its_share_of_the_scaled_maximum():
    task = _task(tests={"heavy": course.TestRule(weight=3)})
    cases = [_case("heavy", 1, "failed", "wrong value"), _case("light", 1, "passed"),
             _case("heavy", 8, "skipped", NOT_RUN), _case("light", 8, "skipped", NOT_RUN)]
    ts = score_task(task, cases)
    assert ts.max_score == 10 and ts.score == 2.5
    assert ts.status == "partial"


def test_a_task_with_nothing_run_here_has_no_maximum():
    ts = score_task(_task(), [_case("t", 8, "skipped", NOT_RUN)])
    assert (ts.score, ts.max_score, ts.status) == (0, 0, "not run here")
    assert ts.reason == NOT_RUN
    score = Score([ts])
    assert score.scaled and score.full_max_total == 20 and score.percent == 0


def test_report_says_what_did_not_run_and_scales_the_maximum():
    out = grade_on_a_machine_with(2)
    report, text = out["report"], out["text"]
    dot = report["tasks"][0]
    points = find_course(str(ROOT)).exercise("exercise7").task("dot").points
    skipped = [c for c in dot["cases"] if c["outcome"] == "skipped"]
    assert {c["devices"] for c in skipped} == {4}
    assert all(c["message"] == "not run here (needs 4 devices, this machine has 2)" for c in skipped)
    assert all(c["outcome"] == "passed" for c in dot["cases"] if c["devices"] in (1, 2))
    assert dot["not_run"] == len(skipped) and dot["points"] == points
    # the maximum is scaled by the weight of the cases that ran (the structural test runs from 2 devices on)
    share = sum(c["weight"] for c in dot["cases"] if c["outcome"] != "skipped") / sum(c["weight"] for c in dot["cases"])
    assert 0 < share < 1 and dot["max_score"] == round(points * share, 4) == dot["score"]
    assert (report["max_score"], report["full_max_score"], report["percent"]) == (dot["max_score"], points, 100)
    assert report["devices_here"] == 2
    assert f"{len(skipped)} not run here (needs 4 devices, this machine has 2)" in text
    assert f"maximum scaled from {report_points(points)} to {report_points(points * share)}" in text
    assert "cpu, 2 on this machine" in text and "ran on 1, 2 devices" in text


def test_to_text_is_unchanged_when_everything_ran():
    ts = score_task(_task(), [_case("t", 1, "passed"), _case("t", 8, "passed")])
    assert not Score([ts]).scaled and ts.max_score == 20
    exercise = course.Exercise("exercise7", "T", (ts.task,), "tests/exercise7", "exercises/exercise7", "solutions/exercise7")
    run = RunResult(exercise=exercise, submission=Submission("s", "s", ()), seed=1, backend="cpu", cases=ts.cases,
                    info={"device_kind": "cpu"})
    text = to_text(run, Score([ts]), "course")
    assert "maximum scaled" not in text and "not run here" not in text
    assert "backend cpu (emulated cpu devices, jax ?) · ran on 1, 8 devices" in text


def test_auto_on_one_gpu_grades_every_case_and_says_where_each_ran():
    out = grade_on_a_machine_with(1, gpus=True)
    report, text = out["report"], out["text"]
    dot = report["tasks"][0]
    points = find_course(str(ROOT)).exercise("exercise7").task("dot").points
    assert {c["devices"] for c in dot["cases"]} == {1, 2, 4}
    assert all(c["outcome"] == "passed" for c in dot["cases"]) and dot["not_run"] == 0
    assert (dot["score"], report["max_score"], report["full_max_score"]) == (points, points, points)
    assert report["ran_on"] == [
        {"devices": 1, "processes": None, "backend": "gpu", "where": "fake GPU, 1 on this machine"},
        {"devices": 2, "processes": None, "backend": "cpu", "where": "emulated CPU devices"},
        {"devices": 4, "processes": None, "backend": "cpu", "where": "emulated CPU devices"}]
    assert "not run here" not in text and "maximum scaled" not in text
    assert "ran on fake GPU, 1 on this machine (1 device) and emulated CPU devices (2, 4 devices)" in text
    assert "backend gpu (fake GPU, 1 on this machine, jax " in text  # the machine's, not an emulated worker's "cpu"


def test_ran_on_names_the_places_when_the_run_used_two_or_only_emulated_ones_on_an_accelerator():
    cases = [_case("t", 1, "passed"), _case("t", 8, "passed")]
    ts = score_task(_task(), cases)
    exercise = course.Exercise("exercise7", "T", (ts.task,), "tests/exercise7", "exercises/exercise7",
                               "solutions/exercise7")
    one_place = [{"devices": d, "processes": None, "backend": "cpu", "where": "emulated CPU devices"} for d in (1, 8)]
    run = RunResult(exercise=exercise, submission=Submission("s", "s", ()), seed=1, backend="gpu", cases=cases,
                    info={"device_kind": "NVIDIA H200"}, devices_here=1, placement=one_place)
    run.backend, run.devices_here = "cpu", None
    assert "ran on 1, 8 devices ·" in to_text(run, Score([ts]), "course")
    run.backend, run.devices_here = "gpu", 1  # a GPU machine whose cases all ran emulated says so (a TPU run did not)
    assert "ran on emulated CPU devices (1, 8 devices) ·" in to_text(run, Score([ts]), "course")
    run.placement[0].update(backend="gpu", where="NVIDIA H200, 1 on this machine")
    assert "ran on NVIDIA H200, 1 on this machine (1 device) and emulated CPU devices (8 devices)" in \
        to_text(run, Score([ts]), "course")



def test_a_test_of_weight_zero_is_feedback_only():
    """course.yaml's weight 0 (basics' result placement): its failure shows, costs nothing, and never leads the
    reason while a test that costs points failed."""
    task = _task(tests={"where": course.TestRule(weight=0)})
    feedback = _case("where", 2, "failed", "its result lives on 1 device")
    ts = score_task(task, [_case("t", 1, "passed"), _case("t", 2, "passed"), feedback])
    assert (ts.score, ts.max_score, ts.status) == (20, 20, "passed")
    assert ts.reason == "[2 devices] its result lives on 1 device"
    ts = score_task(task, [_case("t", 1, "passed"), _case("t", 2, "failed", "wrong value"), feedback])
    assert ts.status == "partial" and ts.reason == "[2 devices] wrong value"
