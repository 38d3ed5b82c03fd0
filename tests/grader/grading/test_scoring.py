"""grader.grading.scoring: a task's cases read together, each failure's message against the others'."""

import dataclasses

from grader import course
from grader.course import Task
from grader.grading.case import Case
from grader.grading.scoring import score_task


def test_a_task_score_checks_a_factor_named_as_the_device_count_against_the_other_counts():
    """The same parametrised case at 2 and 4 devices: the 2-device message loses its claim; another function's
    case at 4 devices with the same factor does not count."""
    task = Task(id="train", title="Train", points=10, hint="", devices=(2, 4), timeout_s=30, files=("train.py",))
    on2 = "loss is 1/2 of the answer (2 is the number of devices)"
    cases = [Case(nodeid="t.py::test_loss[2dev-fit]", test="test_loss", task="train", devices=2, outcome="failed",
                  message=on2),
             Case(nodeid="t.py::test_loss[4dev-step]", test="test_loss", task="train", devices=4, outcome="failed",
                  message="loss is 0.5 times the answer")]
    assert score_task(task, cases).cases[0].message == on2  # another function's case
    cases.append(Case(nodeid="t.py::test_loss[4dev-fit]", test="test_loss", task="train", devices=4, outcome="failed",
                      message="loss is 0.5 times the answer"))
    scored = score_task(task, cases)
    assert scored.cases[0].message == "loss is 1/2 of the answer (the same on 4 devices: a factor of the code, not the " \
                                      "device count)"
    assert scored.reason.endswith("not the device count)"), scored.reason


def test_a_test_whose_points_need_every_device_count_earns_them_together_or_not_at_all():
    """A structural test passed at 4 devices and failed at 8 (a program that reads the device count while it is
    traced): with all_counts its 4-device case fails too, told by the 8-device failure, and the report leads with
    the case that measured it; another parameter's cases and a test without the rule keep what they earned."""
    rule = {"test_ring": course.TestRule(weight=2, all_counts=True)}
    task = Task(id="rings", title="Rings", points=12, hint="", devices=(4, 8), timeout_s=30, files=("rings.py",),
                tests=rule)
    said = "ring_all_gather runs an all-gather over 'model' on a 4 x 2 mesh"

    def case(test, param, devices, failed=False):
        return Case(nodeid=f"t.py::{test}[{devices}dev-{param}]", test=test, task="rings", devices=devices,
                    outcome="failed" if failed else "passed", message=said if failed else "",
                    kind="failed" if failed else "")

    cases = [case("test_ring", "gather", 4), case("test_ring", "gather", 8, failed=True), case("test_ring", "scatter", 4),
             case("test_ring", "scatter", 8), case("test_values", "gather", 4), case("test_values", "gather", 8)]
    scored = score_task(task, cases)
    assert [c.outcome for c in scored.cases] == ["failed", "failed", "passed", "passed", "passed", "passed"]
    assert scored.cases[0].message == f"passes here, but its points need every device count, and on 8 devices: {said}"
    assert scored.score == 12 * (2 + 2 + 1 + 1) / 10
    assert scored.reason == f"[8 devices] {said}"
    # the same cases without the rule: the 4-device case keeps its points
    assert score_task(dataclasses.replace(task, tests={}), cases).score == 12 * 5 / 6
