"""The grader's side of the sandbox: combining workers' records, levels, the switch, the survey."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import run_grade
from grader.errors import UsageError
from grader.grading import confinement
from toycourse import EXERCISE, SOLUTIONS, make_course

FULL = {"held": ["files", "network", "processes", "syscalls", "uid", "lifetime", "limits"], "missing": {},
        "landlock_abi": 7, "cost_ms": 1.0}
NOT_ROOT = {"held": ["files", "network", "processes", "syscalls", "lifetime", "limits"],
            "missing": {"uid": "the grader is not root, so workers keep its uid"}, "landlock_abi": 7, "cost_ms": 2.0}
GROUP = {"held": ["files", "processes", "syscalls", "lifetime", "limits"],
         "missing": {"network": "TCP connections are open: gloo",
                     "uid": "the grader is not root, so workers keep its uid"},
         "landlock_abi": 6, "cost_ms": 3.0}


def test_a_run_holds_a_layer_only_where_every_worker_held_it():
    run = confinement.combine([FULL, NOT_ROOT, GROUP])
    assert run["held"] == ["files", "processes", "syscalls", "lifetime", "limits"]
    assert run["missing"] == {"network": "TCP connections are open: gloo",
                              "uid": "the grader is not root, so workers keep its uid"}
    assert run["workers"] == 3 and run["landlock_abi"] == 6 and "cost_ms" not in run
    assert confinement.median_cost_ms([FULL, NOT_ROOT, GROUP]) == 2.0 and confinement.median_cost_ms([]) == 0.0
    assert confinement.combine([]) == {"held": [], "missing": {}, "workers": 0}


def test_describe_names_what_held_and_what_did_not():
    assert confinement.describe(NOT_ROOT) == ("files, network, processes, syscalls, lifetime, limits; not here: uid "
                                              "(the grader is not root, so workers keep its uid)")
    assert confinement.describe(FULL) == "files, network, processes, syscalls, uid, lifetime, limits"
    assert confinement.describe({"held": [], "missing": {"files": "off"}}) == "none; not here: files (off)"
    assert confinement.describe(NOT_ROOT, why=False) == "files, network, processes, syscalls, lifetime, limits; not here: uid"


def test_levels_name_what_is_missing():
    confinement.require("basic", GROUP)  # basic asks nothing of network or uid
    with pytest.raises(confinement.SandboxRefused, match=r"--require-sandbox strict: this run cannot confine student "
                                                         r"code enough; missing: network \(TCP connections"):
        confinement.require("strict", GROUP, "this run")
    no_landlock = {"held": ["processes", "syscalls", "lifetime", "limits"],
                   "missing": {"files": "the kernel has no Landlock (ENOSYS)"}}
    with pytest.raises(confinement.SandboxRefused, match=r"missing: files \(the kernel has no Landlock \(ENOSYS\)\)"):
        confinement.require("basic", no_landlock)
    unbounded = {"held": ["files", "processes", "syscalls", "lifetime"],
                 "missing": {"limits": "not bounded: the process count (...)"}}
    with pytest.raises(confinement.SandboxRefused, match=r"missing: limits \(not bounded: the process count"):
        confinement.require("basic", unbounded)  # a fork bomb would starve classmates
    confinement.require("none", {"held": [], "missing": {"files": "x", "syscalls": "y"}})
    with pytest.raises(UsageError, match="--require-sandbox takes none, basic, strict"):
        confinement.require("paranoid", FULL)


def test_the_measuring_switch():
    assert confinement.switched_off({}) == ()
    assert confinement.switched_off({"GRADE_SANDBOX": "1"}) == ()
    assert confinement.switched_off({"GRADE_SANDBOX": "0"}) == ("all",)
    assert confinement.switched_off({"GRADE_SANDBOX": "uid, seccomp"}) == ("seccomp", "uid")


def test_the_survey_asks_a_fresh_python_and_honours_the_switch():
    here = confinement.survey(())
    assert set(here) >= {"held", "missing"} and here["cost_ms"] == 0.0
    off = confinement.survey(("landlock",))
    assert off["missing"]["files"] == "switched off for this run"
    everything_off = confinement.survey(("all",))
    assert everything_off["held"] == []


def test_grade_check_says_what_this_machine_can_confine(monkeypatch):
    monkeypatch.setenv("GRADE_SANDBOX", "0")
    assert confinement.here_line().startswith("sandbox on this machine: none; not here: files (switched off")
    assert confinement.here_line().endswith("(meets --require-sandbox none)")
    monkeypatch.setenv("GRADE_SANDBOX", "uid")
    line = confinement.here_line()
    assert "uid (switched off for this run)" in line and "(meets --require-sandbox strict)" not in line


# ---------------------------------------------------------------- --require-sandbox on the command line


def test_grade_refuses_a_machine_below_the_required_level(tmp_path):
    course = make_course(tmp_path / "course")
    proc = run_grade(EXERCISE, "--submission", str(course / "solutions"), "--require-sandbox", "basic",
                     cwd=course, env={"GRADE_SANDBOX": "seccomp"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--require-sandbox basic: this machine cannot confine student code enough; missing: syscalls " \
           "(switched off for this run)" in proc.stderr
    assert proc.stdout == ""  # nothing graded, no report that looks finished


def test_grade_defaults_to_none_and_says_what_held(tmp_path):
    course = make_course(tmp_path / "course")
    proc = run_grade(EXERCISE, "--submission", str(course / "solutions"), cwd=course,
                     env={"GRADE_SANDBOX": "seccomp"})
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith("sandbox: ") and "syscalls" in last.partition("not here: ")[2]
    assert "(" not in last, "the layers' names; the reasons are in the JSON report and grade check"


def test_batch_insists_on_basic_by_default(tmp_path):
    course = make_course(tmp_path / "course")
    proc = run_grade("batch", str(course / "solutions"), "--exercise", EXERCISE, "--gradebook",
                     str(tmp_path / "book.sqlite"), cwd=course, env={"GRADE_SANDBOX": "landlock"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--require-sandbox basic" in proc.stderr and "files (switched off for this run)" in proc.stderr
    assert not (tmp_path / "book.sqlite").exists()


def test_batch_refuses_a_machine_without_namespaces_where_one_student_could_starve_another(tmp_path):
    """No pid or mount namespace and no cgroup (a container whose seccomp profile refuses namespaces): no bound
    on a worker's processes without a uid or a pids cgroup of its own, and none on its scratch's size; basic is
    refused, saying so."""
    course = make_course(tmp_path / "course")
    proc = run_grade("batch", str(course / "solutions"), "--exercise", EXERCISE, "--gradebook",
                     str(tmp_path / "book.sqlite"), cwd=course, env={"GRADE_SANDBOX": "namespaces,uid,cgroups"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "missing: limits (not bounded: the process count" in proc.stderr
    assert "the scratch's size (no private tmpfs: switched off for this run)" in proc.stderr


def test_autograde_writes_results_then_exits_2_when_refused(tmp_path):
    course = make_course(tmp_path / "course")
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    for name, text in SOLUTIONS.items():
        (root / "submission" / name).write_text(text)
    proc = run_grade("autograde", EXERCISE, "--root", str(root), cwd=course, env={"GRADE_SANDBOX": "0"})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "missing: files (switched off for this run)" in proc.stdout
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and results["tests"] == []


def test_a_batch_fails_a_grading_whose_workers_were_confined_less_than_required(tmp_path):
    """The batch checks each child's recorded sandbox (children do not survey the machine again)."""
    from grader.classroom import batch, roster
    from grader.course import load_course

    course = load_course(str(make_course(tmp_path / "course") / "course.yaml"))
    settings = batch.Settings(course, course.exercise(EXERCISE), 1, None, "hash", 1, 60.0, "cpu",
                              require_sandbox="basic")
    done = subprocess.Popen(["true"])
    done.wait()
    scratch = tmp_path / "job"
    scratch.mkdir()
    (scratch / "log.txt").write_text("")

    def result(sandbox: dict):
        report = {"score": 10.0, "max_score": 10.0, "tasks": [], "sandbox": sandbox}
        (scratch / "report.json").write_text(json.dumps(report))
        job = batch.Job(batch.Planned(roster.Entry("ann", (str(tmp_path),)), "h"), str(scratch), done, 0.0)
        return batch.Batch(settings, None, None)._result(job)

    weak = result({"held": ["processes", "syscalls", "lifetime", "limits"],
                   "missing": {"files": "the kernel has no Landlock"}})
    assert (weak.status, weak.score) == ("failed", 0.0)
    assert weak.error == ("its workers were not confined enough for --require-sandbox basic: missing files "
                          "(the kernel has no Landlock)")
    strong = result(NOT_ROOT)
    assert (strong.status, strong.score) == ("graded", 10.0)


def test_memory_bounded_per_process_only_meets_basic_not_strict_and_the_run_says_which_bound():
    cgroup = dict(FULL, memory_bound="cgroup v1: 4096 MB for the worker's processes together")
    rlimit = {"held": [layer for layer in FULL["held"]], "landlock_abi": 7, "cost_ms": 1.0,
              "missing": {"memory": "bounded per process (RLIMIT_DATA), not per worker: no memory cgroup (EACCES)"},
              "memory_bound": "RLIMIT_DATA: 4096 MB per process"}
    confinement.require("basic", rlimit)
    with pytest.raises(confinement.SandboxRefused, match=r"missing: memory \(bounded per process \(RLIMIT_DATA\)"):
        confinement.require("strict", rlimit)
    assert confinement.combine([cgroup, rlimit])["memory_bound"] == "RLIMIT_DATA: 4096 MB per process"
    assert confinement.combine([cgroup, cgroup])["memory_bound"] == cgroup["memory_bound"]
