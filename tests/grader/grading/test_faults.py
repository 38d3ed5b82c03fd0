"""The fault catalogue of DESIGN.md: every kind of broken or hostile submission gets a named verdict.

One generated course holds one task per fault; every task asks for the same function,
``<module>.double(x)`` = 2 * x computed with jax.pmap, and each module of the submission breaks it in
one way (or is correct, to prove the faults around it cost nothing else). The whole catalogue is
graded in one run of the real CLI, then each verdict is checked on its own.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import run_grade
from grader import cgroups

CORRECT = """
import jax

def double(x):
    return jax.pmap(lambda v: v * 2)(x)
"""

FAULTS = {
    "correct": CORRECT,
    "stub": """
def double(x):
    raise NotImplementedError("write double")
""",
    "syntax": """
def double(x)
    return x * 2
""",
    "importerr": """
import jax_but_misspelled

def double(x):
    return x * 2
""",
    "missing": """
def triple(x):
    return x * 3
""",
    "signature": """
def double():
    return 0
""",
    "shape": """
import jax.numpy as jnp

def double(x):
    return jnp.sum(x * 2)
""",
    "value": """
def double(x):
    return x * 3
""",
    "loop": """
def double(x):
    while True:
        pass
""",
    "segfault": """
import ctypes

def double(x):
    return ctypes.string_at(0)
""",
    "osexit": """
import os

def double(x):
    os._exit(0)
""",
    "sysexit": """
import sys

def double(x):
    sys.exit(0)
""",
    "deadlock": """
import jax
from jax import lax

def double(x):
    def f(v):
        return lax.cond(lax.axis_index("i") == 0, lambda u: lax.psum(u, "i"), lambda u: u, v) * 0 + v * 2
    return jax.pmap(f, axis_name="i")(x)
""",
    "membomb": """
import numpy as np

def double(x):
    return np.ones((1 << 16, 1 << 16))
""",
    # Memory no per-process limit sees: memfds, in chunks, past the course's 3072 MB (the worker's memory cgroup
    # ends it; where no cgroup can be made, memfd_create is refused).
    "memfdbomb": """
import os

def double(x):
    held = []
    for _ in range(32):
        fd = os.memfd_create("hog")
        os.posix_fallocate(fd, 0, 192 << 20)  # under the 256 MiB file size limit
        held.append(fd)
    return x * 2
""",
    "flood": CORRECT + """
_double = double

def double(x):
    for _ in range(200_000):
        print("spam spam spam spam spam spam spam spam spam spam")
    return _double(x)
""",
    "alwayseq": """
class Anything:
    def __eq__(self, other):
        return True

def double(x):
    return Anything()
""",
    "subclass": """
import numpy as np

class Liar(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(self), bool)

def double(x):
    return np.zeros_like(x).view(Liar)
""",
    "patching": """
import numpy as np
import pytest
import numpy.testing

np.isclose = lambda *a, **k: np.array(True)
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
pytest.approx = lambda expected, **k: expected
import grader.suite.checks
grader.suite.checks.expect_close = lambda *a, **k: None

def double(x):
    return x
""",
    # Called through a probe of the suite (PROBE below), which the student never sees: a failure must name
    # the student's function, whether it raised inside it or in the probe on what it returned.
    "probed": """
def _halve(x):
    raise ValueError("halving is not doubling")

def double(x):
    return _halve(x)
""",
    "probedreturn": """
def double(x):
    return [1.0, 2.0, 3.0]
""",
    "forged": """
import json, os

def double(x):
    report = {"score": 100, "max_score": 100, "percent": 100.0, "tasks": []}
    with open(os.environ.get("FORGE_PATH", "forged.json"), "w") as f:
        json.dump(report, f)
    with open(FORGE_TARGET, "w") as f:
        json.dump(report, f)
    return x
""",
}
TEST_FILE = """
import numpy as np
from grader.suite import expect_close


def test_double(student, rng, devices):
    x = rng.normal(size=(devices, 3))
    expect_close(student.call("{module}.double", x), 2 * x, what="double(x)")
"""

PROBE = """
import numpy as np
from grader.sandbox import student_function


def twice(module, x):
    return np.asarray(student_function(module + ".double")(x), dtype=float).reshape(x.shape)
"""
PROBED_TEST_FILE = """
from grader.suite import expect_close


def test_double(student, rng, devices):
    x = rng.normal(size=(devices, 3))
    expect_close(student.probe("probes.twice", "{module}", x), 2 * x, what="double(x)")
"""


@pytest.fixture(scope="module")
def fault_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    output = root / "report.json"
    tasks = "\n".join(f"      - {{id: {m}, title: {m}, points: 10, hint: 'double x with pmap'}}" for m in FAULTS)
    (root / "course.yaml").write_text(textwrap.dedent("""\
        course: faults
        defaults: {devices: [1, 2], timeout_s: 6, memory_mb: 3072}
        exercises:
          ex:
            title: Fault catalogue
            tasks:
        """) + tasks + "\n")
    for folder in ("exercises/ex", "tests/ex"):
        (root / folder).mkdir(parents=True)
    for module, source in FAULTS.items():
        source = source.replace("FORGE_TARGET", repr(str(output)))
        (root / "exercises/ex" / f"{module}.py").write_text(textwrap.dedent(source))
        test_file = PROBED_TEST_FILE if module.startswith("probed") else TEST_FILE
        (root / "tests/ex" / f"test_{module}.py").write_text(test_file.replace("{module}", module))
    (root / "tests/ex" / "probes.py").write_text(PROBE)
    proc = run_grade("ex", "--course", str(root), "--format", "json", "--output", str(output), "--seed", "7",
                     timeout=900)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(output.read_text())
    return {t["id"]: t for t in report["tasks"]}, report


def _case_messages(task):
    return " | ".join(c["message"] for c in task["cases"])


@pytest.mark.parametrize("module, status, phrase", [
    ("stub", "not started", "still raises NotImplementedError"),
    ("syntax", "import error", "SyntaxError"),
    ("importerr", "import error", "jax_but_misspelled"),
    ("missing", "missing", "has no function double"),
    ("signature", "wrong signature", "cannot be called with 1 positional argument"),
    ("shape", "wrong answer", "returned a scalar, expected shape"),
    ("value", "wrong answer", "is 1.5 times the answer at every entry"),
    ("loop", "timed out", "timed out after 6 s"),
    ("segfault", "crashed", "signal 11: SIGSEGV"),
    ("osexit", "crashed", "exit code 0"),
    ("sysexit", "crashed", "called sys.exit(0)"),
    ("membomb", "memory limit", "memory"),
    ("alwayseq", "wrong type", "returned an object of type"),
    ("subclass", "wrong answer", "is 0 at every entry"),
    ("patching", "wrong answer", "is 0.5 times the answer at every entry"),
])
def test_fault_gets_named_verdict_and_no_points(fault_report, module, status, phrase):
    tasks, _ = fault_report
    task = tasks[module]
    assert task["score"] == 0, f"{module} gained points: {task}"
    assert task["status"] == status, task["reason"]
    assert phrase in _case_messages(task), _case_messages(task)


def test_memory_held_outside_any_process_limit_is_bounded_for_the_worker(fault_report):
    tasks, _ = fault_report
    task = tasks["memfdbomb"]
    assert task["score"] == 0, task
    if cgroups.survey()["memory"]:  # no memory cgroup here: nothing would bound memfds, so they are refused
        assert "PermissionError" in _case_messages(task), _case_messages(task)
    else:
        assert task["status"] == "memory limit", task["reason"]
        assert "exceeded the 3072 MB memory limit" in _case_messages(task), _case_messages(task)


def test_where_points_at_the_student_file_and_line(fault_report):
    tasks, _ = fault_report
    assert tasks["syntax"]["cases"][0]["where"] == "syntax.py:2"
    assert tasks["stub"]["cases"][0]["where"] == "stub.py:3"
    assert tasks["importerr"]["cases"][0]["where"] == "importerr.py:2"


def test_a_probe_failure_names_the_students_function_never_the_probe(fault_report):
    tasks, _ = fault_report
    assert {c["message"] for c in tasks["probed"]["cases"]} == {'double() raised ValueError at `raise ValueError("halving is not doubling")`: halving is not doubling'}
    assert tasks["probed"]["cases"][0]["where"] == "probed.py:3"  # where it raised: the helper double called
    returned = {c["devices"]: c["message"] for c in tasks["probedreturn"]["cases"]}  # 3 values fit 1 device's row
    assert returned[2].startswith("double() raised ValueError: cannot reshape array of size 3"), returned


def test_a_collective_only_some_devices_reach_is_named_a_deadlock(fault_report):
    tasks, _ = fault_report
    by_devices = {c["devices"]: c for c in tasks["deadlock"]["cases"]}
    assert by_devices[1]["outcome"] == "passed"  # alone, device 0 has no one to wait for
    assert by_devices[2]["kind"] == "deadlock", by_devices[2]["message"]
    assert "only 1 of 2 devices reached its all reduce" in by_devices[2]["message"]
    assert "psum inside lax.cond" in by_devices[2]["message"]


def test_faults_cost_nothing_elsewhere(fault_report):
    tasks, _ = fault_report
    assert tasks["correct"]["score"] == 10
    assert tasks["correct"]["status"] == "passed"


def test_output_flood_is_capped_and_grading_goes_on(fault_report):
    tasks, report = fault_report
    assert tasks["flood"]["score"] == 10
    kept = sum(len(text) for text in report["student_output"].values())
    assert 0 < kept < 4 * 70_000, kept
    assert any("output capped" in text for text in report["student_output"].values())


def test_forged_results_file_is_overwritten_by_the_real_report(fault_report):
    tasks, report = fault_report
    assert tasks["forged"]["score"] == 0
    assert report["score"] < report["max_score"]
    assert report["schema"] == "pmap-course/report"
