"""The clean worker of program mode: forked like the student's, kept apart from student code, and
replaced after any program that failed in it; the student's worker is told shapes and dtypes only."""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import ROOT
from grader.errors import StudentFailure
from grader.grading.program_mode import specs
from grader.grading.student import Student
from grader.layout import Layout
from grader.protocol import ArraySpec
from grader.workers.backends import EMULATED
from grader.workers.pool import WorkerPool
from grader.workers.worker import RunSettings

LAYOUT = Layout(2)
SOLUTION = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
WRONG_SHAPES = SOLUTION + '''
_real_export = jax.export.export


def _for_three_numbers(fn, **kwargs):
    jax.export.export = _real_export  # once: the next program of this worker is exported as asked
    return lambda *args: _real_export(fn, **kwargs)(*[jax.ShapeDtypeStruct((3,), a.dtype) for a in args])


jax.export.export = _for_three_numbers
'''


ROWS = '''
import jax
from jax import lax


def row_sums(x):
    return jax.pmap(lambda r: lax.psum(r, "i"), axis_name="i")(x)
'''


@pytest.fixture
def pool(tmp_path):
    submission, suite, engine = tmp_path / "submission", tmp_path / "suite", tmp_path / "engine"
    for d in (submission, suite, engine):
        d.mkdir()
    (submission / "dot.py").write_text(SOLUTION)
    (submission / "shapes.py").write_text(WRONG_SHAPES)
    (submission / "rows.py").write_text(ROWS)
    (engine / "grader").symlink_to(ROOT / "grader")
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, 2048, 30.0, clean_home=str(tmp_path / "clean")),
                      str(engine))
    yield pool
    pool.close()


def run(pool, target, x):
    """(value, hlo) of ``target`` on (x, x)."""
    out = pool.program(LAYOUT, target, specs((x, x)), [(x, x)], {}, "distributed_dot()")
    return out["values"][0], out["hlo"]


def clean_process(pool):
    return pool._clean[LAYOUT].proc


def test_the_clean_worker_is_a_sibling_of_the_students_that_starts_in_a_folder_of_its_own(pool):
    x = np.arange(45, dtype=np.float32)
    value, hlo = run(pool, "dot.distributed_dot", x)
    assert np.isclose(value, x @ x) and "all-reduce" in hlo
    student, clean = pool.worker(LAYOUT).proc.pid, clean_process(pool).pid
    assert student != clean
    parents = {int(open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[1]) for pid in (student, clean)}
    assert len(parents) == 1, "both should be forked by the run's one zygote"
    folder = os.readlink(f"/proc/{clean}/cwd")
    assert folder != os.readlink(f"/proc/{student}/cwd")
    assert os.listdir(folder) == [".tmp"], "nothing of the submission is in the clean worker's folder"


def test_a_program_that_fails_in_the_clean_worker_costs_it_its_process(pool):
    x = np.arange(45, dtype=np.float32)
    run(pool, "dot.distributed_dot", x)
    first = clean_process(pool).pid
    with pytest.raises(StudentFailure) as failure:
        run(pool, "shapes.distributed_dot", x)
    assert failure.value.kind == "not_exportable"
    assert "it takes float32[3], float32[3], not the test's inputs" in failure.value.message
    assert clean_process(pool) is None
    value, _ = run(pool, "dot.distributed_dot", x)
    assert np.isclose(value, x @ x)
    assert clean_process(pool).pid != first


def test_a_clean_worker_runs_nothing_but_programs(pool):
    run(pool, "dot.distributed_dot", np.ones(4, np.float32))
    with pytest.raises(StudentFailure, match="a clean worker only runs programs"):
        pool._clean[LAYOUT].request("call", "dot.distributed_dot", (np.ones(4),) * 2, {}, "distributed_dot()")


def test_the_students_worker_is_told_shapes_and_dtypes_and_the_clean_one_runs_two_sets(pool, monkeypatch):
    sent = []
    student_worker = pool.worker(LAYOUT)
    real_request = type(student_worker).request
    monkeypatch.setattr(type(student_worker), "request", lambda self, op, target, args, *rest, **kw: (
        sent.append((self is student_worker, op, args)), real_request(self, op, target, args, *rest, **kw))[1])
    x = np.arange(45, dtype=np.float32)
    program = Student(pool, LAYOUT, 30.0, np.random.default_rng(0)).program(
        "dot.distributed_dot", x, x, expect=lambda a, b: np.dot(a.astype(np.float64), b))
    assert np.isclose(program.value, x @ x) and program.manual
    (told,) = [args for mine, op, args in sent if mine]
    assert told == (ArraySpec((45,), "float32"), ArraySpec((45,), "float32"))
    (ran,) = [args for mine, op, args in sent if op == "run_program"]
    assert len(ran) == 2 and ran[0] == (x, x) and not np.array_equal(ran[1][0], x)


def test_a_program_over_fewer_devices_runs_on_as_many_only_where_the_test_asks_for_them(pool):
    """A jax.pmap over the n - 1 rows of x is a program built for n - 1 devices (a ring of some of the devices):
    the clean worker runs it on as many, and the grader refuses it unless the test asked for that count."""
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    student = Student(pool, Layout(4), 30.0, np.random.default_rng(0))
    expect = lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape)  # noqa: E731
    program = student.program("rows.row_sums", x, expect=expect, devices=3)
    assert np.allclose(program.value, expect(x)) and "all-reduce" in program.hlo
    with pytest.raises(StudentFailure, match="row_sums's program was refused: it was built for 3 devices, and this "
                                             "test runs it on 4"):
        student.program("rows.row_sums", x, expect=expect)
