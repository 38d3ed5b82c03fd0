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


def _failed(test, n, message):
    return Case(nodeid=f"{test}[{n}]", test=test, task="basics", devices=n, outcome="failed", kind="wrong",
                message=message)


def test_every_broken_function_of_a_task_is_shown_once():
    task = course.Task(id="basics", title="Basics", points=10, hint="", devices=(1, 2), timeout_s=30,
                       files=("test_basics.py",))
    cases = [_failed("a", 1, "square_plus_one(x) with x of shape (1, 3) is wrong at 3 of 3 entries"),
             _failed("a", 2, "square_plus_one(x) with x of shape (2, 3) is wrong at 6 of 6 entries"),
             _failed("b", 2, "per_device_sum(x) returned shape (3,), expected shape (2,)"),
             Case(nodeid="c[2]", test="c", task="basics", devices=2, outcome="passed"),
             _failed("d", 2, "a message that names no function of the task")]
    functions = ("square_plus_one", "per_device_sum", "per_device_matmul")
    ts = score_task(task, cases, functions)
    assert ts.reason.startswith("[2 devices] square_plus_one(x)")  # the first failing test, on more than one device
    assert ts.other_failures == ["[2 devices] per_device_sum(x) returned shape (3,), expected shape (2,)"]
    exercise = course.Exercise("ex", "T", (task,), "tests/ex", "exercises/ex", "solutions/ex")
    run = RunResult(exercise=exercise, submission=Submission("s", "s", ()), seed=1, backend="cpu", cases=cases,
                    info={"device_kind": "cpu"})
    text = to_text(run, Score([ts]), "course")
    assert "also: [2 devices] per_device_sum(x) returned shape (3,)" in text
    assert score_task(task, cases).other_failures == []  # without the task's functions, the first failure only


def test_a_function_is_named_as_a_whole_word_and_the_earliest_counts():
    from grader.grading.functions import named_function
    names = ("ring_allreduce", "ring_allreduce_optimal", "ring_shift")
    assert named_function("ring_allreduce_optimal on 4 devices ...", names) == "ring_allreduce_optimal"
    assert named_function("ring_allreduce on 4 devices, via ring_shift", names) == "ring_allreduce"
    assert named_function("my_ring_shift is not asked for", names) is None


def test_a_tasks_functions_are_read_from_its_stub_module():
    from conftest import ROOT
    from grader.grading.functions import task_functions
    exercise = course.load_course(str(ROOT / "course.yaml")).exercise("exercise7")
    found = task_functions(str(ROOT / "exercises" / "exercise7"), exercise)
    assert found["basics"] == ("square_plus_one", "per_device_sum", "per_device_matmul")
    assert found["ring"] == found["ring_optimal"] and "ring_allreduce_optimal" in found["ring"]
    assert task_functions(str(ROOT / "no such folder"), exercise) == {}


def test_the_headline_is_the_first_failing_tests_case_on_more_than_one_device_where_it_has_one():
    """On one device every collective is the identity: the same test on two devices measures the mistake."""
    task = course.Task(id="ring", title="Ring", points=10, hint="", devices=(1, 2), timeout_s=30,
                       files=("test_ring.py",))
    one = _failed("a", 1, "ring_allreduce is 2 times the answer")
    two = _failed("a", 2, "ring_allreduce counts x's block 0 twice")
    later = _failed("b", 2, "ring_allreduce runs 3 ppermutes")
    assert score_task(task, [one, two, later]).reason == "[2 devices] ring_allreduce counts x's block 0 twice"
    assert score_task(task, [one, later]).reason == "[1 device] ring_allreduce is 2 times the answer"  # test a's only
    raised = Case(nodeid="a[2]", test="a", task="ring", devices=2, outcome="failed", kind="raised", message="raised")
    assert score_task(task, [one, raised]).reason.startswith("[1 device]")  # of the first failure's kind


def test_the_headline_is_a_case_whose_message_measured_the_most():
    """A wrong value told only where it differs yields to another case of the task that measured how; a factor that
    two mesh axes share (a 2 x 2 mesh) yields to one that names its axis."""
    task = course.Task(id="two_d", title="2-D", points=5, hint="", devices=(4, 8), timeout_s=30,
                       files=("test_two_d.py",))
    where = _failed("a", 4, "train_step is wrong at 3 of 3 entries")
    where.told = 0
    shared = _failed("b", 4, "result[0] is 2 times the change (2 is the number of devices along 'data' and of devices "
                             "along 'model')")
    shared.told = 1
    named = _failed("b", 8, "result[0] is 2 times the change (2 is the number of devices along 'data')")
    assert score_task(task, [where, shared, named]).reason == f"[8 devices] {named.message}"
    assert score_task(task, [where, shared]).reason == f"[4 devices] {shared.message}"
    assert score_task(task, [where]).reason == f"[4 devices] {where.message}"


def test_a_case_is_told_by_how_much_its_message_measured():
    from grader.grading.plugin import _told
    from grader.suite.checks import Unexplained, WrongProgram
    assert _told(Unexplained("f is wrong at 3 of 3 entries"), "f is wrong at 3 of 3 entries", False) == 0
    assert _told(Unexplained("f is wrong"), "f is wrong. Compared with the reference solution: ...", True) == 2  # a layout measured after
    program = WrongProgram("f is wrong at 3 of 3 entries", None)
    program.unexplained = True
    assert _told(program, str(program), False) == 0
    assert _told(AssertionError("f is 2 times the answer"), "f is 2 times the answer (2 is the number of devices "
                 "along 'data' and of devices along 'model')", False) == 1
    assert _told(AssertionError("devices hold different values"), "devices hold different values", False) == 2


def test_the_total_counts_extra_credit_beside_the_maximum_never_as_a_share_of_zero():
    def scored(task_id, points, extra):
        task = course.Task(id=task_id, title=task_id, points=points, hint="", devices=(1,), timeout_s=30,
                           files=(f"test_{task_id}.py",), extra_credit=extra)
        return score_task(task, [Case(nodeid=f"{task_id}[1]", test="t", task=task_id, devices=1, outcome="passed")])

    only_extra, both = Score([scored("two_d", 5, True)]), Score([scored("dot", 15, False), scored("two_d", 5, True)])
    assert only_extra.points_text() == "5 extra credit"
    assert both.points_text() == "15 / 15 + 5 extra credit"
    run, _ = _report()
    total = [line for line in to_text(run, only_extra, "course").splitlines() if line.strip().startswith("total")]
    assert total == ["  total  5 extra credit"], "no '5 / 0 (0%)' that reads as nothing earned"
