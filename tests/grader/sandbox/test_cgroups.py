"""A worker's control groups (grader.cgroups): what a grader that died hard left is removed by the next run, a live
grader's never; and the cgroup v2 path, which this project's machine cannot give (its memory, cpu and pids
controllers are bound to v1 hierarchies), run against a v2 hierarchy faked in a folder, file for file, and for real
where the machine has one."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import traceback

import pytest

from conftest import ROOT
from grader import cgroups
from grader.workers.launch import Launcher

_OWNER = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {root!r})
    from grader import cgroups

    child = os.fork()
    if child == 0:  # the worker's holder: it makes its groups, then leaves them, as grader.sandbox.confine does
        made, _ = cgroups.join(64 << 20, 64)
        cgroups.leave(made)
        os.write(1, (json.dumps(sorted(set(made.values()))) + "\\n").encode())
        os._exit(0)
    os.waitpid(child, 0)
    print(child, flush=True)
    sys.stdin.readline()  # the test says when to collect, as the grader would once the worker is done
    print(json.dumps(cgroups.collect(child)), flush=True)
    sys.stdin.readline()
""")


def _owner() -> tuple[subprocess.Popen, list[str]]:
    """A grader stand-in whose worker made its groups and ended; it has not collected them yet."""
    proc = subprocess.Popen([sys.executable, "-I", "-c", _OWNER.format(root=str(ROOT))], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    groups = json.loads(proc.stdout.readline())
    proc.stdout.readline()
    return proc, groups


@pytest.mark.skipif(os.geteuid() != 0 or any(cgroups.survey().values()),
                    reason="this machine makes no memory, cpu and pids cgroups for a worker (root on a cgroup "
                           "hierarchy that has them)")
def test_groups_of_a_grader_killed_hard_are_removed_by_the_next_run_and_a_live_graders_are_kept():
    dead, dead_groups = _owner()
    live, live_groups = _owner()
    try:
        assert len(dead_groups) == len(live_groups) == 3 and all(map(os.path.isdir, dead_groups + live_groups))
        dead.kill()
        dead.wait()
        assert set(dead_groups) <= set(cgroups.stale()) and not set(live_groups) & set(cgroups.stale())
        Launcher(str(ROOT), False, 60).close()  # the next grading run
        assert not any(map(os.path.isdir, dead_groups)), "the dead grader's groups were left"
        assert all(map(os.path.isdir, live_groups)), "a live grader's groups are its own to read and remove"
        live.stdin.write("\n")
        live.stdin.flush()
        assert json.loads(live.stdout.readline())["task_hits"] == 0
        assert not any(map(os.path.isdir, live_groups))
    finally:
        live.kill()
        live.wait()


_V2_FILES = {"cgroup.controllers": "cpu memory pids\n", "cgroup.subtree_control": "", "cgroup.procs": "",
             "memory.max": "max\n", "memory.swap.max": "max\n", "memory.peak": "0\n",
             "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", "cpu.weight": "100\n", "pids.max": "max\n",
             "pids.events": "max 0\n"}


@pytest.fixture
def fake_v2(tmp_path, monkeypatch):
    """A cgroup v2 hierarchy in ``tmp_path/unified``, this process in its group ``grader``, which delegates memory
    and pids (not cpu) to its children. As the kernel's: mkdir makes a group with its interface files; rmdir of a
    group fails (EBUSY) while a process is listed in its cgroup.procs, and removes its files with it."""
    root = tmp_path / "unified"
    real_mkdir, real_rmdir = os.mkdir, os.rmdir

    def mkdir(path, mode=0o777, **kwargs):
        real_mkdir(path, mode, **kwargs)
        if str(path).startswith(str(root)):
            for name, text in _V2_FILES.items():
                (root / path / name).write_text(text)

    def rmdir(path, **kwargs):
        if not str(path).startswith(str(root)):
            return real_rmdir(path, **kwargs)
        if (root / path / "cgroup.procs").read_text().split():
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        real_rmdir(path)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "rmdir", rmdir)
    mkdir(root)
    (root / "cgroup.subtree_control").write_text("cpu memory pids\n")
    mkdir(root / "grader")
    (root / "grader" / "cgroup.subtree_control").write_text("memory pids\n")
    (tmp_path / "cgroup").write_text("0::/grader\n")
    (tmp_path / "mountinfo").write_text(f"41 31 0:38 / {root} rw,relatime - cgroup2 cgroup2 rw\n"
                                        "35 31 0:32 / /somewhere/else rw,relatime - tmpfs tmpfs rw\n")
    monkeypatch.setattr(cgroups, "OWN_GROUPS", str(tmp_path / "cgroup"))
    monkeypatch.setattr(cgroups, "MOUNTS", str(tmp_path / "mountinfo"))
    return root / "grader"


def _join_in_a_child(memory_bytes: int, tasks: int) -> tuple[int, dict, dict]:
    """Fork a holder that joins its groups and leaves them; returns (its pid, made, why) once it has ended."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            made, why = cgroups.join(memory_bytes, tasks)
            cgroups.leave(made)
            os.write(write, json.dumps([made, why]).encode())
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        made, why = json.loads(f.read() or "[null, null]")
    os.waitpid(pid, 0)
    assert made is not None, "the holder failed to join its groups"
    return pid, made, why


def test_v2_a_controller_not_delegated_is_named_with_why(fake_v2):
    found, why = cgroups.parents()
    assert found == {"memory": str(fake_v2), "pids": str(fake_v2)}
    assert why == {"cpu": f"cgroup v2: the cpu controller is not enabled for the children of {fake_v2} "
                          "(its cgroup.subtree_control)"}


def test_v2_a_workers_group_is_made_bounded_read_and_removed_by_its_owner(fake_v2):
    (fake_v2 / "cgroup.subtree_control").write_text("cpu memory pids\n")
    holder, made, why = _join_in_a_child(256 << 20, 100)
    group = fake_v2 / f"{cgroups.PREFIX}{holder}-{os.getpid()}-{cgroups._started(os.getpid())}"
    assert why == {} and made == dict.fromkeys(cgroups.CONTROLLERS, str(group))
    assert {name: (group / name).read_text() for name in ("memory.max", "memory.swap.max", "pids.max", "cpu.weight")} \
        == {"memory.max": str(256 << 20), "memory.swap.max": "0", "pids.max": "100", "cpu.weight": str(cgroups.CPU_WEIGHT)}
    assert (group / "cgroup.procs").read_text() == str(holder), "the holder moved itself in"
    assert (fake_v2 / "cgroup.procs").read_text() == str(holder), "... and back out, leaving its children in"
    assert cgroups.left_behind() == [holder]
    (group / "cgroup.procs").write_text("")  # the worker's processes have ended
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    (group / "memory.peak").write_text("268435456\n")
    (group / "pids.events").write_text("max 2\n")
    assert cgroups.collect(holder) == {"oom_kills": 1, "memory_hits": 3, "peak_bytes": 268435456, "task_hits": 2}
    assert not group.exists() and cgroups.left_behind() == []


def test_v2_a_grader_whose_group_delegates_nothing_gets_groups_beside_it_and_goes_back_to_its_own(fake_v2):
    """As in a session or a systemd unit: the grader's group holds processes, so it cannot delegate; the group
    above delegates to it, and the worker's groups are made there."""
    (fake_v2 / "cgroup.subtree_control").write_text("")
    above = fake_v2.parent
    holder, made, why = _join_in_a_child(64 << 20, 32)
    group = above / f"{cgroups.PREFIX}{holder}-{os.getpid()}-{cgroups._started(os.getpid())}"
    assert why == {} and made == dict.fromkeys(cgroups.CONTROLLERS, str(group))
    assert (group / "memory.max").read_text() == str(64 << 20) and (group / "pids.max").read_text() == "32"
    assert (fake_v2 / "cgroup.procs").read_text() == str(holder), "back in its own group, not the one above"
    assert (above / "cgroup.procs").read_text() == ""
    assert cgroups.stale() == [] and cgroups.left_behind() == [holder]
    (group / "cgroup.procs").write_text("")
    cgroups.collect(holder)
    assert not group.exists()


def test_v2_no_group_delegating_means_no_groups_and_says_why(fake_v2):
    (fake_v2 / "cgroup.subtree_control").write_text("")
    (fake_v2.parent / "cgroup.subtree_control").write_text("hugetlb\n")
    assert cgroups.parents() == ({}, {c: f"cgroup v2: the {c} controller is not enabled for the children of "
                                         f"{fake_v2} (its cgroup.subtree_control)" for c in cgroups.CONTROLLERS})


def test_v2_without_a_memory_limit_only_processes_are_bounded(fake_v2):
    holder, made, _ = _join_in_a_child(0, 64)
    group = made["pids"]
    assert (fake_v2 / os.path.basename(group) / "memory.max").read_text() == "max\n"
    assert (fake_v2 / os.path.basename(group) / "pids.max").read_text() == "64"
    (fake_v2 / os.path.basename(group) / "cgroup.procs").write_text("")
    cgroups.collect(holder)


def test_stale_groups_are_those_whose_owner_is_gone_or_is_another_process_now(fake_v2):
    me, started = os.getpid(), cgroups._started(os.getpid())
    ended = subprocess.Popen(["true"])
    ended.wait()
    names = {"live": f"{cgroups.PREFIX}7-{me}-{started}", "pid_reused": f"{cgroups.PREFIX}8-{me}-{int(started) + 1}",
             "owner_gone": f"{cgroups.PREFIX}9-{ended.pid}-{started}", "busy": f"{cgroups.PREFIX}10-{ended.pid}-1",
             "other_version": f"{cgroups.PREFIX}11", "not_ours": "user.slice"}
    for name in names.values():
        os.mkdir(fake_v2 / name)
    (fake_v2 / names["busy"] / "cgroup.procs").write_text(str(me))  # a process still runs in it
    assert cgroups.stale() == sorted(str(fake_v2 / names[k]) for k in ("pid_reused", "owner_gone", "busy"))
    assert cgroups.remove_stale() == sorted(str(fake_v2 / names[k]) for k in ("pid_reused", "owner_gone"))
    assert sorted(os.listdir(fake_v2)) == sorted([*_V2_FILES, names["live"], names["busy"], names["other_version"],
                                                  names["not_ours"]])


def _no_v2() -> str:
    """Why this process's children get no cgroup v2 groups with the controllers a worker needs ("" where they do)."""
    found, why = cgroups.parents()
    on_v1 = [c for c, folder in found.items() if not os.path.exists(os.path.join(folder, "cgroup.controllers"))]
    if why or on_v1:
        return "no cgroup v2 hierarchy with memory, cpu and pids for a worker here: " + "; ".join(
            [*why.values(), *(f"{c} is bound to a cgroup v1 hierarchy (/proc/cgroups)" for c in on_v1)])
    return ""


@pytest.mark.skipif(bool(_no_v2()), reason=_no_v2() or "v2 is here")
def test_v2_for_real_a_workers_group_bounds_its_memory_and_is_removed():
    holder, made, why = _join_in_a_child(128 << 20, 64)
    assert why == {} and set(made) == set(cgroups.CONTROLLERS)
    with open(os.path.join(made["memory"], "memory.max")) as f:
        assert f.read().strip() == str(128 << 20)
    assert cgroups.collect(holder)["task_hits"] == 0
    assert not os.path.exists(made["memory"])
