"""A student's own exception on an input the test chose is told as such, with the call it raised on."""

import numpy as np

from grader.errors import StudentFailure
from grader.grading.plugin import explain
from grader.grading.student import called_as


def test_the_call_is_written_as_the_student_would_read_it():
    x = np.zeros(37, np.float32)
    assert called_as("distributed_dot", (x, x), {}) == "distributed_dot(float32[37], float32[37])"
    assert called_as("fit", ((x, np.zeros((2, 3), np.int32)), 3), {"lr": 0.1}) == "fit((float32[37], int32[2,3]), 3, lr=0.1)"
    assert called_as("f", ("a" * 40,), {}) == "f('" + "a" * 16 + "...)"


def test_an_own_raise_names_the_call_and_a_jax_error_is_left_to_its_rules():
    own = StudentFailure("raised", "distributed_dot() raised ValueError at `raise ValueError(msg)`: 37 does not divide",
                         exc_type="ValueError", raised_in="submission", detail="37 does not divide")
    own.called_as = "distributed_dot(float32[37], float32[37])"
    assert explain(own, 4)[1] == ("distributed_dot() raised ValueError at `raise ValueError(msg)`: 37 does not divide; "
                                  "your own code raised it, on distributed_dot(float32[37], float32[37]), an input the "
                                  "task allows")
    plain = StudentFailure("raised", "f() raised ValueError: no", exc_type="ValueError", raised_in="submission")
    assert explain(plain, 4)[1] == "f() raised ValueError: no"  # not from student.call: nothing to add


def test_an_own_raise_while_a_program_is_traced_names_the_call_and_its_inputs(tmp_path):
    from conftest import ROOT, build_submission, grade_json, task

    source = (ROOT / "solutions" / "exercise8" / "compiler.py").read_text() + '''

def no_collective(x, w, mesh):
    if x.shape[0] % 4:
        raise ValueError("batch must be a multiple of 4")
    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", "model")))(x, w)
'''
    submission = build_submission(tmp_path, {"compiler": source}, exercise="exercise8")
    report = grade_json(submission, "--task", "compiler", "--devices", "2", exercise="exercise8")
    messages = [c["message"] for c in task(report, "compiler")["cases"] if c["outcome"] != "passed"]
    assert any("your own code raised it, on no_collective(x, w, mesh) on a 1 x 2 mesh with inputs float32[3,4], "
               "float32[4,10], an input the task allows" in m for m in messages), messages
