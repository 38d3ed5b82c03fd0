"""Workers start and grade with a CUDA-like PJRT plugin installed, and one that cannot start names the limit it met.

The plugin is the stand-in of fakeplugin.py, sized from the real jax-cuda12-plugin (a worker with it maps
4.56 GiB): it maps 6 GiB it never touches and starts 64 threads in every worker. A worker's memory is
bounded by what it uses (its memory cgroup, or RLIMIT_DATA where none can be made), not by its address
space, so the reference solutions keep full marks and the stubs zero either way; under the old bound
(RLIMIT_AS of the course's 4096 MB) every worker aborted at start-up.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import fakeplugin
from conftest import ROOT
from grader import cgroups

pytestmark = pytest.mark.skipif(not os.uname().sysname == "Linux", reason="the plugin maps memory as Linux does")


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    made = fakeplugin.install(tmp_path_factory.mktemp("plugin"), reserve_gib=6, threads=64)
    yield made
    fakeplugin.configure(made, reserve_gib=6, threads=64)


def _grade(python: str, submission: str, switch: str = "", devices: str = "8") -> subprocess.CompletedProcess:
    """Task dot graded with the plugin installed, at 8 devices by default: the most a worker holds (the plugin's
    reserve and threads are the same in every worker; grade check proves every count without it)."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "GRADE_SANDBOX": switch}
    return subprocess.run([python, "-c", "from grader.cli import main; main()", "exercise7", "--submission",
                           submission, "--task", "dot", "--format", "json", "--seed", "1", "--devices", devices],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("switch", ["", "cgroups"], ids=["memory cgroup where one is made", "RLIMIT_DATA"])
def test_solutions_keep_full_marks_and_stubs_zero_with_the_plugin(python, switch):
    for submission, expected in (("solutions", "full"), ("exercises/exercise7", "zero")):
        if switch and submission != "solutions":
            continue  # the stubs' zero does not depend on the memory bound
        proc = _grade(python, submission, switch, devices="8" if expected == "full" else "1")  # a stub raises at any count
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout)
        assert report["score"] == (report["max_score"] if expected == "full" else 0), (submission, report["score"])
        if switch:
            assert report["sandbox"]["memory_bound"] == "RLIMIT_DATA: 4096 MB per process", report["sandbox"]


def test_the_plugin_runs_in_every_worker_and_a_worker_it_stops_names_the_limit(python):
    """2000 threads: past a worker's 1024 processes and threads. The worker cannot start, and the error says why."""
    fakeplugin.configure(python, reserve_gib=6, threads=2000)
    proc = _grade(python, "solutions")
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "pthread_create failed" in proc.stderr  # the plugin ran, and aborted as the real one does
    if not cgroups.survey()["pids"]:  # a pids cgroup of its own tells afterwards which bound the worker met
        assert "reaching its limit of processes and threads" in proc.stderr, proc.stderr[-2000:]
