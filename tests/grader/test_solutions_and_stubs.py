"""The course is sound on these tasks: the reference solutions score full marks at every device count, the stubs zero."""

from conftest import ROOT, grade_json, task_scores

TASKS = ("dot", "ring", "ring_optimal", "train", "mesh")
TASK_ARGS = [arg for t in TASKS for arg in ("--task", t)]


def test_solutions_score_full_marks():
    report = grade_json(ROOT / "solutions", *TASK_ARGS)
    full = {t["id"]: t["max_score"] for t in report["tasks"]}
    assert set(full) == set(TASKS)
    assert task_scores(report) == full
    assert all(t["status"] == "passed" for t in report["tasks"])


def test_stubs_score_zero_and_are_not_started():
    report = grade_json(ROOT / "exercises", *TASK_ARGS)
    assert set(task_scores(report).values()) == {0}
    assert {t["status"] for t in report["tasks"]} == {"not started"}
