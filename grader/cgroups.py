"""Control groups of a worker's own: its memory bounded as a sum, a CPU share of its own, gone with it.

A per-process limit (RLIMIT_AS, RLIMIT_DATA) bounds neither what a worker's many processes hold
together nor memory that is not mapped private: memfd, tmpfs, System V and POSIX shared memory. A
memory control group counts all of it, for every process in it, and when the group passes its
limit the kernel's OOM killer picks a process *in that group*: nobody else on the machine is
touched. A CPU control group gives the worker one share however many threads it runs, so a
submission that keeps every core busy slows its own worker, not a classmate's. A pids control group
bounds its tasks (processes and threads) on any kernel, and says afterwards whether the worker ran
into that bound: a worker that could not start names the limit it hit, threads or memory.

The worker's *holder* (grader.sandbox.namespaces) makes the groups before it starts the worker:
:func:`join` makes a group in each hierarchy (v1: under its own), sets the limits and moves itself in;
everything it starts then is in the group. The holder then moves itself back out (:func:`leave`), so
that what the OOM killer may choose is the worker and what the student started, never the holder.
The holder's parent, the grader or the zygote that collects the holder's exit (grader.processes.reap),
*owns* the group: it reads the group's counters and removes it (:func:`collect`) once every process in
it has ended, so nothing of it outlives the worker. A group is named after its holder and its owner,
``grade-worker-<holder pid>-<owner pid>-<owner's start time>`` (the start time tells a live owner from a
later process given the same pid). An owner that died hard (SIGKILL) removes nothing: the next grading
run removes every empty group whose owner is gone (:func:`remove_stale`), and never a group whose owner
lives, which may still be waiting to read it.

Where a group can be made: root, on cgroup v1 (a hierarchy per controller, as on this project's
machine) or on cgroup v2 where a group lets its children have the controller (``cgroup.subtree_control``):
the grader's own group, which the kernel allows only for the root group (a group with processes in it
delegates nothing), else the group above it, and the worker's groups are then made *beside* the
grader's. A normal user gets them where that group above is its own (a delegated subtree: a systemd
user session's app slice). Elsewhere :func:`join` says why not, and the worker keeps a per-process bound
(grader.sandbox.confine).
"""

from __future__ import annotations

import errno
import os
import time

CONTROLLERS = ("memory", "cpu", "pids")
PREFIX = "grade-worker-"
_V2 = ""  # the key of the unified hierarchy in the maps below
# A worker's CPU share weighs as much as one busy process per core of the machine (the default share,
# cpu.shares 1024 or cpu.weight 100, is one process's): workers weigh the same as each other, and a worker's
# group does not lose to the processes outside any group on a busy machine, as it would with one process's share.
CPU_SHARES = 1024 * (os.cpu_count() or 1)
CPU_WEIGHT = min(10000, 100 * (os.cpu_count() or 1))
REMOVE_GRACE_S = 2.0  # how long collect waits for the last process of a group to be gone
OWN_GROUPS, MOUNTS = "/proc/self/cgroup", "/proc/self/mountinfo"  # where the kernel says which groups and hierarchies
_came_from: dict[str, str] = {}  # a group :func:`join` made -> the group this process was in (where leave puts it back)


def _own_groups() -> dict[str, str]:
    """controller (or _V2) -> this process's group in that hierarchy, from /proc/self/cgroup."""
    groups = {}
    try:
        with open(OWN_GROUPS) as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else (_V2,):
                    groups[controller] = path
    except OSError:
        pass
    return groups


def _mount_points() -> dict[str, str]:
    """controller (or _V2) -> where its hierarchy is mounted, from /proc/self/mountinfo."""
    points = {}
    try:
        with open(MOUNTS) as f:
            for line in f:
                before, _, after = line.partition(" - ")
                fstype, _, options = after.split()[:3]
                if fstype == "cgroup2":
                    points.setdefault(_V2, before.split()[4])
                elif fstype == "cgroup":
                    for option in options.split(","):
                        points.setdefault(option, before.split()[4])
    except OSError:
        pass
    return points


def _delegates(folder: str) -> set[str]:
    """The controllers a v2 group lets its children have (its cgroup.subtree_control)."""
    try:
        with open(os.path.join(folder, "cgroup.subtree_control")) as f:
            return set(f.read().split())
    except OSError:
        return set()


def _own_folders() -> dict[str, str]:
    """controller (or _V2) -> the folder of this process's own group in that hierarchy."""
    groups, points = _own_groups(), _mount_points()
    return {key: os.path.join(points[key], groups[key].lstrip("/")).rstrip("/") for key in groups if key in points}


def _v2_parent(own: str) -> str:
    """Where a worker's v2 groups go: under this process's group where it delegates a controller (only the root
    group can, with processes in it), else beside it, in the group above, which delegates to it ("" for neither).
    One folder for every controller: a process is in one v2 group."""
    above = os.path.dirname(own)
    mounted = {point.rstrip("/") for key, point in _mount_points().items() if key == _V2}
    for parent in (own, "" if own in mounted else above):
        if parent and _delegates(parent) & set(CONTROLLERS):
            return parent
    return ""


def parents() -> tuple[dict[str, str], dict[str, str]]:
    """(controller -> the folder a worker's group goes in, controller -> why there is none) for this process."""
    own = _own_folders()
    found, why = {}, {}
    v2 = _v2_parent(own[_V2]) if _V2 in own else ""
    for controller in CONTROLLERS:
        if controller in own:
            found[controller] = own[controller]
        elif v2 and controller in _delegates(v2):
            found[controller] = v2
        elif _V2 in own:
            why[controller] = (f"cgroup v2: the {controller} controller is not enabled for the children of "
                               f"{v2 or own[_V2]} (its cgroup.subtree_control)")
        else:
            why[controller] = f"no cgroup hierarchy with the {controller} controller is mounted"
    return found, why


def _v1(folder: str) -> bool:
    return not os.path.exists(os.path.join(folder, "cgroup.controllers"))


def _write(folder: str, name: str, value) -> None:
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(value))


def _limits(controller: str, folder: str, memory_bytes: int, tasks: int) -> None:
    if controller == "pids":
        _write(folder, "pids.max", tasks)
    elif controller == "memory" and memory_bytes:
        if _v1(folder):
            _write(folder, "memory.limit_in_bytes", memory_bytes)
            if os.path.exists(os.path.join(folder, "memory.memsw.limit_in_bytes")):
                _write(folder, "memory.memsw.limit_in_bytes", memory_bytes)  # no escape into swap
        else:
            _write(folder, "memory.max", memory_bytes)
            if os.path.exists(os.path.join(folder, "memory.swap.max")):
                _write(folder, "memory.swap.max", 0)
    elif controller == "cpu":  # the same share for every worker's group, whatever number of threads runs in it
        _write(folder, *(("cpu.shares", CPU_SHARES) if _v1(folder) else ("cpu.weight", CPU_WEIGHT)))


def _started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot ("" when there is no such process)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _name(holder: int, owner: int) -> str:
    return f"{PREFIX}{holder}-{owner}-{_started(owner)}"


def _make(folder: str) -> None:
    try:
        os.mkdir(folder, 0o755)
    except FileExistsError:  # a group of a holder of this owner's that the owner could not remove, same pid again
        os.rmdir(folder)
        os.mkdir(folder, 0o755)


def join(memory_bytes: int, tasks: int) -> tuple[dict[str, str], dict[str, str]]:
    """Make this process's groups (see the module's docstring) and move into them.

    Returns (controller -> the group's folder, controller -> why it has none). ``memory_bytes``: the
    group's memory limit (0: none); ``tasks``: the most processes and threads it may hold.
    """
    pid = os.getpid()
    name = _name(pid, os.getppid())
    found, why = parents()
    own = _own_folders()
    made = {}
    for controller, parent in found.items():
        folder = os.path.join(parent, name)
        if folder in made.values():  # controllers mounted together (cpu,cpuacct; v2): one group
            try:
                _limits(controller, folder, memory_bytes, tasks)
            except OSError as exc:
                why[controller] = f"the {controller} cgroup {folder} could not be set up: {exc.strerror}"
                continue
            made[controller] = folder
            continue
        try:
            _make(folder)
        except OSError as exc:
            why[controller] = f"a {controller} cgroup could not be made in {parent}: {exc.strerror}"
            continue
        try:
            _limits(controller, folder, memory_bytes, tasks)
            _write(folder, "cgroup.procs", pid)
        except OSError as exc:
            why[controller] = f"the {controller} cgroup {folder} could not be set up: {exc.strerror}"
            os.rmdir(folder)
            continue
        made[controller] = folder
        _came_from[folder] = own.get(controller, own.get(_V2, parent))
    return made, why


def leave(made: dict[str, str]) -> None:
    """Move this process back to the group it came from, in every hierarchy (its children stay)."""
    for folder in set(made.values()):
        _write(_came_from.get(folder, os.path.dirname(folder)), "cgroup.procs", os.getpid())


def _read(folder: str, name: str) -> str:
    try:
        with open(os.path.join(folder, name)) as f:
            return f.read()
    except OSError:
        return ""


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def counters(controller: str, folder: str) -> dict[str, int]:
    """What a group's counters say. memory: ``oom_kills`` (processes its OOM killer ended), ``memory_hits``
    (times an allocation met the limit), ``peak_bytes``; pids: ``task_hits`` (forks and threads refused)."""
    if controller == "pids":
        return {"task_hits": _counter(_read(folder, "pids.events"), "max")}
    if controller != "memory":
        return {}
    if _v1(folder):  # its failcnt stays 0 on some kernels (6.18's v1): a peak at the limit says it too
        peak, limit = (int(_read(folder, name) or 0) for name in ("memory.max_usage_in_bytes", "memory.limit_in_bytes"))
        failed = sum(int(_read(folder, name) or 0) for name in ("memory.failcnt", "memory.memsw.failcnt"))
        return {"oom_kills": _counter(_read(folder, "memory.oom_control"), "oom_kill"), "peak_bytes": peak,
                "memory_hits": failed or int(limit > 0 and peak >= limit - (limit >> 6))}
    events = _read(folder, "memory.events")
    return {"oom_kills": _counter(events, "oom_kill"), "memory_hits": _counter(events, "max"),
            "peak_bytes": int(_read(folder, "memory.peak").strip() or 0)}


def collect(pid: int) -> dict[str, int]:
    """Read and remove the groups of the worker whose holder was ``pid``, this process's child (none: {}), once its
    processes are gone; returns their :func:`counters`. Call it after the holder has been collected."""
    found, _ = parents()
    name = _name(pid, os.getpid())
    out: dict[str, int] = {}
    folders: dict[str, list[str]] = {}  # one folder for the controllers of a hierarchy (v2: all of them)
    for controller, parent in found.items():
        folders.setdefault(os.path.join(parent, name), []).append(controller)
    for folder, controllers in folders.items():
        if not os.path.isdir(folder):
            continue
        for controller in controllers:
            out.update(counters(controller, folder))
        deadline = time.monotonic() + REMOVE_GRACE_S
        while True:
            try:
                os.rmdir(folder)
                break
            except OSError as exc:  # EBUSY: a process of it is still ending
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
    return out


def _groups() -> list[tuple[str, int, int, str]]:
    """Every worker group where this process's workers' groups go (:func:`parents`): (folder, holder pid, owner pid,
    owner's start time)."""
    found, _ = parents()
    out = []
    for parent in set(found.values()):
        for name in os.listdir(parent) if os.path.isdir(parent) else ():
            parts = name.removeprefix(PREFIX).split("-")
            if name.startswith(PREFIX) and len(parts) == 3 and all(p.isdigit() for p in parts):
                out.append((os.path.join(parent, name), int(parts[0]), int(parts[1]), parts[2]))
    return out


def left_behind() -> list[int]:
    """The holders' pids of this process's worker groups that outlived their holder: what :func:`collect` would
    still remove."""
    me = os.getpid()
    return sorted({holder for _, holder, owner, _ in _groups() if owner == me and not os.path.exists(f"/proc/{holder}")})


def stale() -> list[str]:
    """The worker groups whose owner has ended (a grader or zygote that died before it could remove them)."""
    return sorted(folder for folder, _, owner, started in _groups() if _started(owner) != started)


def remove_stale() -> list[str]:
    """Remove the stale groups that hold no process any more; returns those removed. A group whose owner lives is
    never touched, nor one a process still runs in (its removal fails; a later run tries again)."""
    removed = []
    for folder in stale():
        try:
            os.rmdir(folder)
            removed.append(folder)
        except OSError:
            pass
    return removed


def survey() -> dict[str, str]:
    """controller -> why a worker could not have a group of it here ("" where it could): made and removed."""
    probe = f"{PREFIX}survey-{os.getpid()}"
    found, why = parents()
    out = {c: why.get(c, "") for c in CONTROLLERS}
    for controller, parent in found.items():
        try:
            os.mkdir(os.path.join(parent, probe))
            os.rmdir(os.path.join(parent, probe))
        except OSError as exc:
            out[controller] = f"a {controller} cgroup could not be made in {parent}: {exc.strerror}"
    return out
