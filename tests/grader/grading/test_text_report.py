"""The student's text report, from a run built by hand: what it says once, and nothing it contradicts."""

from grader import course
from grader.grading.case import Case
from grader.grading.report import to_text
from grader.grading.runner import RunResult
from grader.grading.scoring import Score, score_task
from grader.submission import Submission

SANDBOX = {"held": ["files", "network", "signals", "syscalls", "lifetime", "limits"],
           "missing": {"uid": "another uid could not read /root (mode 0700), which the worker needs; a Python "
                              "installed where every user can read it (e.g. /usr or /opt) gets this layer"},
           "workers": 2}


def _report(**run_fields):
    task = course.Task(id="dot", title="Dot", points=15, hint="psum once", devices=(1, 2), timeout_s=30,
                       files=("test_dot.py",))
    cases = [Case(nodeid=f"t[{n}]", test="t", task="dot", devices=n, outcome="passed") for n in (1, 2)]
    ts = score_task(task, cases)
    exercise = course.Exercise("ex", "T", (task,), "tests/ex", "exercises/ex", "solutions/ex")
    run = RunResult(exercise=exercise, submission=Submission("s", "s", ()), seed=1, backend="cpu", cases=cases,
                    info={"device_kind": "cpu"}, **run_fields)
    return run, Score([ts])


def test_what_the_code_printed_is_either_offered_or_shown():
    run, score = _report(student_output={"1 device": "hello\n", "2 devices": "hello\nhello\n"})
    offered = to_text(run, score, "course")
    assert "your code printed 18 characters (--show-output shows them)" in offered
    assert "| hello" not in offered
    shown = to_text(run, score, "course", show_output=True)
    assert "--show-output" not in shown, "the output is shown: nothing to offer"
    assert shown.endswith("your code printed (2 devices):\n  | hello\n  | hello\n")


def test_the_sandbox_is_one_line_naming_the_layers():
    run, score = _report(sandbox=SANDBOX)
    last = to_text(run, score, "course").rstrip("\n").splitlines()[-1]
    assert last == "sandbox: files, network, signals, syscalls, lifetime, limits; not here: uid"
