"""grader.grading.scoring: a task's cases read together, each failure's message against the others'."""

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
