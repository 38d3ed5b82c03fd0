"""The clean worker of program mode: forked like the student's, kept apart from student code, and
replaced after any program that failed in it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import ROOT
from grader.errors import StudentFailure
from grader.layout import Layout
from grader.workers.backends import EMULATED
from grader.workers.pool import WorkerPool
from grader.workers.worker import RunSettings

LAYOUT = Layout(2)
SOLUTION = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
WRONG_SHAPES = SOLUTION + '''
_real_export = jax.export.export


def _for_three_numbers(fn, **kwargs):
    jax.export.export = _real_export  # once: the next program of this worker is exported as asked
    return lambda *args: _real_export(fn, **kwargs)(*[a[:3] for a in args])


jax.export.export = _for_three_numbers
'''


@pytest.fixture
def pool(tmp_path):
    submission, suite, engine = tmp_path / "submission", tmp_path / "suite", tmp_path / "engine"
    for d in (submission, suite, engine):
        d.mkdir()
    (submission / "dot.py").write_text(SOLUTION)
    (submission / "shapes.py").write_text(WRONG_SHAPES)
    (engine / "grader").symlink_to(ROOT / "grader")
    pool = WorkerPool(RunSettings(str(submission), str(suite), EMULATED, 2048, 30.0, clean_home=str(tmp_path / "clean")),
                      str(engine))
    yield pool
    pool.close()


def run(pool, target, x):
    return pool.program(LAYOUT, target, (x, x), {}, "distributed_dot()")


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
    assert "does not run on the test's inputs" in failure.value.message
    assert clean_process(pool) is None
    value, _ = run(pool, "dot.distributed_dot", x)
    assert np.isclose(value, x @ x)
    assert clean_process(pool).pid != first


def test_a_clean_worker_runs_nothing_but_programs(pool):
    run(pool, "dot.distributed_dot", np.ones(4, np.float32))
    with pytest.raises(StudentFailure, match="a clean worker only runs programs"):
        pool._clean[LAYOUT].request("call", "dot.distributed_dot", (np.ones(4),) * 2, {}, "distributed_dot()")
