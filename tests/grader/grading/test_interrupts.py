"""Ctrl-C and SIGTERM: a real ``grade`` or ``grade batch`` stops, kills every process it started,
removes its scratch, says "interrupted" and exits 130; a batch keeps what it saved and resumes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess

import pytest

from classroom import graded_count
from conftest import GRADE, ROOT, run_grade
from hangcourse import ENDLESS, SOLUTIONS, make_course, processes_under, under_way, wait_for
from toycourse import write_files


def _start(args, tmp, **kw) -> subprocess.Popen:
    return subprocess.Popen([*GRADE, *args], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_grade_leaves_nothing_and_marks_its_report(tmp_path, sig):
    root = make_course(tmp_path / "course", timeout_s=60)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    output = tmp_path / "r.json"
    proc = _start(["ex1", "--course", str(root), "--format", "json", "--output", str(output)], tmp)
    wait_for(under_way(tmp), what="the endless loop")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.strip().endswith("interrupted")
    assert not processes_under(tmp), "an interrupted run leaves no process"
    assert not list(tmp.iterdir()), "an interrupted run leaves no scratch"
    report = json.loads(output.read_text())
    assert report["interrupted"] is True
    statuses = {t["id"]: t["status"] for t in report["tasks"]}
    assert statuses["tail"] == "not reached" and "no tests" not in statuses.values()
    assert statuses["fine"] == "passed" and statuses["spin"] in ("interrupted", "not reached")
    assert report["score"] == 5, "only the finished task scores"


def _interrupted(tmp_path, *options) -> tuple[str, str]:
    root = make_course(tmp_path / "course", timeout_s=60)
    (tmp_path / "tmp").mkdir()
    proc = _start(["ex1", "--course", str(root), *options], tmp_path / "tmp")
    wait_for(under_way(tmp_path / "tmp"), what="the endless loop")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    return out, err


def test_an_interrupted_text_report_does_not_look_finished(tmp_path):
    out, _ = _interrupted(tmp_path)
    assert out.startswith("hang-course") and out.rstrip().endswith("so this is not your grade")
    assert "not reached" in out and "no tests" not in out


def test_an_interrupted_run_writes_no_gradescope_results(tmp_path):
    """results.json has no way to say "interrupted": Gradescope would take the partial score as the grade."""
    out, err = _interrupted(tmp_path, "--format", "gradescope", "--output", str(tmp_path / "results.json"))
    assert not (tmp_path / "results.json").exists() and out == ""
    assert err.strip() == "interrupted"


def test_an_interrupted_batch_keeps_its_results_refuses_a_second_batch_and_resumes(tmp_path):
    root = make_course(tmp_path / "course", timeout_s=60)
    klass = tmp_path / "class"
    write_files(klass / "ann" / "ex1", SOLUTIONS)
    write_files(klass / "bob" / "ex1", {**SOLUTIONS, "spin.py": ENDLESS["spin.py"]})
    write_files(klass / "cy" / "ex1", SOLUTIONS)
    book = tmp_path / "class.sqlite"
    args = ["batch", str(klass), "--exercise", "ex1", "--course", str(root), "--jobs", "1", "--gradebook", str(book)]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    batch = _start(args, tmp)
    wait_for(lambda: graded_count(book) >= 1, what="ann's result")
    wait_for(under_way(tmp), what="bob's endless loop")

    second = run_grade(*args)
    assert second.returncode == 2
    assert f"{book} is in use by another grade batch (pid {batch.pid})" in second.stderr

    batch.send_signal(signal.SIGINT)
    _, err = batch.communicate(timeout=60)
    assert batch.returncode == 130, err
    assert "interrupted: 1 of 3 finished and saved" in err
    assert not processes_under(tmp), "an interrupted batch leaves no process"
    assert not list(tmp.iterdir()), "an interrupted batch leaves no scratch"

    write_files(klass / "bob" / "ex1", SOLUTIONS)
    resumed = run_grade(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert "grading 2, 1 already graded" in resumed.stderr
    with sqlite3.connect(book) as db:
        assert sorted(db.execute("SELECT student, score FROM results")) == [("ann", 20.0), ("bob", 20.0), ("cy", 20.0)]
        assert sorted(s for (s,) in db.execute("SELECT student FROM history")) == ["ann", "bob", "cy"]


@pytest.mark.parametrize("zygote", ["1", "0"])
def test_a_grader_killed_outright_leaves_no_worker_behind(tmp_path, zygote):
    """SIGKILL cannot be caught: the zygote ends its workers when its grader goes, a fresh worker dies with it."""
    root = make_course(tmp_path / "course", timeout_s=60)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([*GRADE, "ex1", "--course", str(root)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "TMPDIR": str(tmp), "GRADE_ZYGOTE": zygote})
    wait_for(under_way(tmp), what="the endless loop")
    proc.kill()
    proc.wait()
    wait_for(lambda: not processes_under(tmp), timeout=10, what="the killed grader's workers to end")
