"""Confine a worker before it reads student code: every layer this machine allows, and a record of each.

A worker calls :func:`confine` once, after it has its pipes and before it imports anything of the
student's. Each layer is applied where the machine allows it; where it does not, the record says
why, and the worker still grades (the grader decides with ``--require-sandbox`` whether that is
enough). The layers, by the names the record and the reports use:

- ``files``: Landlock. Read-only the Python installation, site-packages, the engine, the system
  programs (/bin, /usr/bin: a program it runs is confined the same way) and libraries, /dev/null,
  /dev/urandom, the CPU topology JAX and XNNPACK read (/proc/cpuinfo too) and the worker's own /proc
  entry; read-write the scratch only (in watch mode, also its own compile cache), with no right to make
  device nodes, FIFOs or sockets there. Nothing else: not the course, the suites, /tmp, another process's /proc
  entry, a classmate's scratch.
- ``network``: no socket but the TCP a multi-process group needs (seccomp), and TCP only to the
  ports given (Landlock, ABI 4); abstract unix sockets outside the worker are out of reach
  (Landlock scope, ABI 6, and no AF_UNIX ``socket()`` at all).
- ``processes``: no process outside the worker's own tree can be signalled, ptraced, prlimit-ed,
  reniced, rescheduled, pinned or read through /proc. A pid namespace of its own
  (grader.sandbox.namespaces) makes every other process unnameable and its /proc lists none;
  without one, each way needs its own layer: Landlock's signal scope (ABI 6), the seccomp filter
  (ptrace, pidfd_*, and prlimit / setpriority / sched_* / ioprio_set on itself only) and Landlock's
  /proc rule.
- ``syscalls``: the seccomp filter of :mod:`grader.sandbox.seccomp`; and no capabilities, whatever
  the uid (grader.sandbox.privileges).
- ``ipc``: System V message queues, semaphores and shared memory, and POSIX message queues, in an
  IPC namespace of the worker's own (a multi-process group's: of the group's own), so they die with
  it and no other worker sees them; without namespaces the seccomp filter refuses them.
- ``uid``: when the worker starts as root, it becomes ``UID_BASE + the holder's pid`` (gid the
  same, no groups) and owns only its scratch. Pids are unique among live processes, so no two
  live workers share a uid, and the range sits above pid_max and the usual /etc/subuid ranges. A
  Python in a folder that uid could not pass (pyenv under /root, mode 0700) is no reason to keep
  root: in the worker's mount namespace that folder is covered by one holding only what the worker
  needs (grader.sandbox.mounts).
- ``lifetime``: nothing the worker starts outlives it: its pid namespace ends with it (without
  one, it is a child subreaper and the grader kills its whole tree: grader.processes.kill_group).
- ``limits``: file size (a write past it fails with EFBIG), open files, no core dumps; the
  process count (threads included), by a pids cgroup of its own (grader.cgroups), the pid
  namespace's own pid_max (Linux 6.14) and, with a uid or a user namespace of its own, RLIMIT_NPROC; the scratch's size, by a private tmpfs of
  SCRATCH_BYTES.
- ``memory``: the worker's processes together, whatever they hold it in (memfd, tmpfs, shared memory),
  by a memory cgroup of its own (grader.cgroups); where none can be made, each process by RLIMIT_DATA
  (which counts what a process writes, not the address space the CUDA libraries reserve), with
  memfd_create and System V shared memory refused, since nothing would bound them.
- ``cpu``: one CPU share per worker, however many threads it runs (a cpu cgroup of its own).

Applying all of it costs about a millisecond; the record carries the measured figure.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import resource
import signal
import stat
import sys
import sysconfig
import time
from dataclasses import dataclass, field

from grader import cgroups, processes
from grader.sandbox import landlock, mounts, namespaces, privileges, seccomp

LAYERS = ("files", "network", "processes", "syscalls", "ipc", "uid", "lifetime", "limits", "memory", "cpu")
MECHANISMS = ("landlock", "seccomp", "namespaces", "uid", "subreaper", "limits", "cgroups")
UID_BASE = 2_000_000_000
FILE_SIZE_LIMIT = 256 << 20
OPEN_FILES_LIMIT = 4096
PROCESS_LIMIT = 1024
_PR_SET_CHILD_SUBREAPER = 36
_SYSTEM_READ_ONLY = ("/bin", "/usr/bin", "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
                     "/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo", "/dev/urandom", "/dev/random",
                     "/dev/zero", "/sys/devices/system/cpu",
                     "/proc/cpuinfo",  # XNNPACK's CPU features, else it prints an error into the student's output
                     "/proc/self")  # the worker's own entry (resolved when the rule is made), not its children's
_SYSTEM_READ_WRITE = ("/dev/null",)
_ACCELERATOR_READ_ONLY = ("/sys", "/proc/driver")
# gloo, in a multi-process group, resolves the host name and lists network interfaces and PCI devices.
_GROUP_READ_ONLY = ("/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
                    "/sys/bus/pci", "/sys/devices", "/sys/class/net")
ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIDS_SLACK = 16  # pid_max above the pids cgroup's bound, so that the group's bound is the one a worker meets
USER_NAMESPACE_NPROC = (5, 14)  # RLIMIT_NPROC counts per user namespace from this kernel on


@dataclass(frozen=True)
class Policy:
    """What one worker may reach.

    ``scratch``: the writable folder (the worker's copy of the submission). ``kept``: folders it may
    write too, which outlive it (watch mode's compile cache; the worker owns them like the scratch).
    ``read_only``:
    folders or files beyond the Python installation and the system libraries (the engine, by
    default). ``devices``: files, or folders of them, it may open for reading and writing but not
    create or remove (an accelerator's device nodes). ``tcp_ports``: None for no TCP at all; else
    the ports a multi-process group binds and connects to (its coordinator's; 0 allows binding an
    ephemeral port). ``tcp_connect_any``: let it connect to any port (gloo's peers listen on
    ephemeral ports nobody knows in advance). ``off``: mechanisms to leave out as if this machine
    lacked them (a test and measurement switch), out of MECHANISMS. ``max_landlock_abi``: pretend
    the kernel's Landlock is no newer than this (1 or more). ``read_by_name``: folders whose files it
    may open by name but which it may neither list nor write (the shared compile cache,
    grader.sandbox.compile_cache; one its uid cannot reach only goes unread). ``process_limit``: the most tasks
    (processes and threads) the worker may have, by its pid namespace's pid_max (at least
    300, the kernel's least) and RLIMIT_NPROC where that counts its own processes only.
    ``scratch_bytes``: the size of its private scratch. ``memory_bytes``: the most memory its processes
    may hold together (0: no bound; the default is course.yaml's default memory_mb). ``network_of``: the pid of the process holding
    its multi-process group's own network namespace, to join (grader.sandbox.namespaces.hold_network;
    0: none). ``limits``: the other resource limits, by RLIMIT_* number.
    """

    scratch: str
    kept: tuple[str, ...] = ()
    read_only: tuple[str, ...] = (ENGINE_DIR,)
    devices: tuple[str, ...] = ()
    tcp_ports: tuple[int, ...] | None = None
    tcp_connect_any: bool = False
    off: frozenset[str] = frozenset()
    max_landlock_abi: int | None = None
    process_limit: int = PROCESS_LIMIT
    scratch_bytes: int = mounts.SCRATCH_BYTES
    memory_bytes: int = 4096 << 20
    network_of: int = 0
    read_by_name: tuple[str, ...] = ()
    limits: dict[int, int] = field(default_factory=lambda: {resource.RLIMIT_FSIZE: FILE_SIZE_LIMIT,
                                                             resource.RLIMIT_NOFILE: OPEN_FILES_LIMIT,
                                                             resource.RLIMIT_CORE: 0})


class _Record:
    """What held and what did not, by mechanism, turned into layers at the end."""

    def __init__(self, policy: Policy):
        unknown = set(policy.off) - set(MECHANISMS)
        if unknown:
            raise ValueError(f"unknown sandbox mechanisms {sorted(unknown)}; known: {', '.join(MECHANISMS)}")
        self.policy = policy
        self.why_not: dict[str, str] = {m: "switched off for this run" for m in policy.off}
        self.landlock_abi = 0
        self.landlock_parts: set[str] = set()  # fs, net, scopes
        self.uid: int | None = None
        self.fresh_proc = ""  # why the worker's pid namespace has no /proc of its own ("" when it has one)
        self.tasks_bounded_by: list[str] = []  # what bounds the process count: "pid_max", "RLIMIT_NPROC"
        self.private_scratch = False
        self.scratch_why = ""  # why the private scratch could not be mounted
        self.tasks_why = ""  # why its pid namespace's pid_max could not be written
        self.private_network = ""  # why the group's own network could not be joined ("" when it was, or none is given)
        self.groups: dict[str, str] = {}  # controller -> the worker's own cgroup (grader.cgroups)
        self.groups_why: dict[str, str] = {}  # controller -> why it has none

    def held(self, mechanism: str) -> bool:
        return mechanism not in self.why_not

    def _processes(self, ll: str, sc: str, scopes_missing: str) -> str:
        ns = self.why_not.get("namespaces", "")
        if not ns:
            return "" if not (ll and self.fresh_proc) else (
                f"other processes' /proc entries are readable: {ll}; {self.fresh_proc}")
        gaps = [f"ptrace, prlimit, setpriority and sched_setaffinity ({sc})" if sc else "",
                f"signals ({scopes_missing})" if scopes_missing else "", f"/proc ({ll})" if ll else ""]
        gaps = [g for g in gaps if g]
        return f"other processes are open to {'; '.join(gaps)}; no pid namespace: {ns}" if gaps else ""

    def _limits(self) -> str:
        if not self.held("limits"):
            return self.why_not["limits"]
        ns = self.why_not.get("namespaces", "")
        gaps = []
        if not self.tasks_bounded_by:
            why = self.tasks_why or ns
            gaps.append("the process count (neither a pids cgroup, nor a pid namespace with its own pid_max, Linux "
                        f"{'.'.join(map(str, namespaces.PID_MAX_PER_NAMESPACE))}, nor a uid or user namespace of "
                        f"its own{': ' + why if why else ''})")
        if not self.private_scratch:
            gaps.append(f"the scratch's size (no private tmpfs: {ns or self.scratch_why})")
        return "not bounded: " + "; ".join(gaps) if gaps else ""

    def shared_ipc(self) -> bool:
        """Whether System V IPC and POSIX message queues would be the machine's (no IPC namespace)."""
        return not self.held("namespaces")

    def unbounded_memory(self) -> bool:
        """Whether no memory cgroup counts memfd and shared memory."""
        return "memory" not in self.groups

    def _ipc(self, sc: str) -> str:
        if not self.shared_ipc() or not sc:
            return ""
        return (f"System V IPC and POSIX message queues are shared with the machine: no IPC namespace "
                f"({self.why_not['namespaces']}) and no seccomp ({sc})")

    def memory_bound(self) -> str:
        """Which bound holds the worker's memory, in words (the record's ``memory_bound``)."""
        mb = self.policy.memory_bytes >> 20
        if not mb:
            return "none"
        if "memory" in self.groups:
            kind = "v1" if cgroups._v1(self.groups["memory"]) else "v2"
            return f"cgroup {kind}: {mb} MB for the worker's processes together"
        return f"RLIMIT_DATA: {mb} MB per process"

    def _memory(self, sc: str) -> str:
        if not self.policy.memory_bytes:
            return "no memory limit is set for this backend"
        if "memory" in self.groups:
            return ""
        why = self.why_not.get("cgroups") or self.groups_why.get("memory", "")
        escape = f"; memfd and shared memory are not bounded ({sc})" if sc else ""
        return f"bounded per process (RLIMIT_DATA), not per worker: no memory cgroup ({why}){escape}"

    def _cpu(self) -> str:
        if "cpu" in self.groups:
            return ""
        return f"no CPU share of its own: {self.why_not.get('cgroups') or self.groups_why.get('cpu', '')}"

    def layers(self) -> dict[str, str]:
        """Layer -> "" when it held, else the reason in words."""
        ll, sc = self.why_not.get("landlock", ""), self.why_not.get("seccomp", "")
        scopes_missing = ll or ("" if "scopes" in self.landlock_parts else
                                f"Landlock ABI {self.landlock_abi} has no scopes (ABI {landlock.SCOPE_ABI} does)")
        net_missing = ll or ("" if "net" in self.landlock_parts else
                             f"Landlock ABI {self.landlock_abi} has no TCP rules (ABI {landlock.NET_ABI} does)")
        tcp = self.policy.tcp_ports is not None
        joined = self.policy.network_of and not self.private_network
        if tcp and self.policy.tcp_connect_any and not net_missing and not joined:
            net_missing = ("a multi-process group's gloo connects to its peers' ephemeral ports, and this group has no "
                           f"network of its own{': ' + self.private_network if self.private_network else ''}")
        ns, reaper = self.why_not.get("namespaces", ""), self.why_not.get("subreaper", "")
        return {
            "files": ll,
            "network": f"other sockets are open: {sc}" if sc else (
                f"TCP connections are open: {net_missing}" if tcp and net_missing else ""),
            "processes": self._processes(ll, sc, scopes_missing),
            "syscalls": sc or self.why_not.get("capabilities", ""),
            "ipc": self._ipc(sc),
            "uid": self.why_not.get("uid", ""),
            "lifetime": f"no pid namespace ({ns}) and no subreaper ({reaper})" if ns and reaper else "",
            "limits": self._limits(),
            "memory": self._memory(sc),
            "cpu": self._cpu(),
        }

    def as_dict(self, cost_ms: float) -> dict:
        layers = self.layers()
        return {"held": [n for n in LAYERS if not layers[n]], "missing": {n: r for n, r in layers.items() if r},
                "landlock_abi": self.landlock_abi, "uid": self.uid,
                "tcp_ports": list(self.policy.tcp_ports) if self.policy.tcp_ports is not None else None,
                "memory_bound": self.memory_bound(),
                "cost_ms": round(cost_ms, 3)}


@functools.lru_cache(maxsize=1)
def python_paths() -> tuple[str, ...]:
    """The Python installation, the environment's site-packages, the folders their ``.pth`` files add to
    sys.path, as ``site`` does (another environment's packages, a plugin's folder), and those of the worker's
    PYTHONPATH (the grader's, where JAX may be: grader.processes.python_path): never a folder on sys.path like
    the cwd or the engine's checkout.

    Cached: a zygote that calls it once hands the answer to every worker it forks.
    """
    sites = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    paths = {sys.base_prefix, *sites, *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib"))}
    paths.update(_pth_folders(sites))
    paths.update(processes.python_path())
    return tuple(sorted(p for p in paths if os.path.exists(p)))


def _pth_folders(sites) -> set[str]:
    """The folders named by the path lines of the ``.pth`` files in ``sites`` (lines that run code are not paths),
    but never the engine's checkout or a folder above it."""
    found = set()
    for site in sites:
        for name in os.listdir(site) if os.path.isdir(site) else ():
            if not name.endswith(".pth"):
                continue
            try:
                with open(os.path.join(site, name), encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if line.strip() and not line.startswith(("#", "import ", "import\t")):
                    folder = os.path.abspath(os.path.join(site, line.rstrip()))
                    if os.path.isdir(folder) and not processes.holds_checkout(folder):
                        found.add(folder)
    return found


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _nproc_counts_own(record: _Record, own_uid: bool) -> bool:
    """Whether RLIMIT_NPROC would count only this worker's processes: a uid of its own, or a user namespace
    of its own on a kernel that counts per user namespace (a normal user's namespaces, grader.sandbox.namespaces)."""
    return record.held("limits") and (own_uid or (os.geteuid() != 0 and record.held("namespaces")
                                                  and namespaces.kernel_at_least(USER_NAMESPACE_NPROC)))


def _pid_max_applies(record: _Record) -> bool:
    return record.held("limits") and record.held("namespaces") and namespaces.per_namespace_pid_max()


def _set_limits(record: _Record) -> None:
    if not record.held("limits"):
        return
    limits = dict(record.policy.limits)
    if _nproc_counts_own(record, record.uid is not None):
        limits[resource.RLIMIT_NPROC] = record.policy.process_limit
        record.tasks_bounded_by.append("RLIMIT_NPROC")
    for which, value in limits.items():
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the size limit fails with EFBIG instead


def _join_groups(record: _Record) -> None:
    """Control groups of the worker's own (grader.cgroups), joined now by the process that becomes its holder."""
    if not record.held("cgroups"):
        return
    try:
        record.groups, record.groups_why = cgroups.join(record.policy.memory_bytes, record.policy.process_limit)
    except OSError as exc:
        record.groups_why = dict.fromkeys(cgroups.CONTROLLERS, f"its cgroups could not be made: {exc}")
    if "pids" in record.groups and record.held("limits"):
        record.tasks_bounded_by.append("pids cgroup")


def _leave_groups(record: _Record) -> None:
    """The holder's first step: out of the worker's groups, so their OOM killer can only choose the worker's
    processes (a holder that cannot leave stays: the worker still gets its bound)."""
    try:
        cgroups.leave(record.groups)
    except OSError:
        pass


def _bound_memory(record: _Record) -> None:
    """RLIMIT_DATA per process where no memory cgroup bounds the worker's processes together (whatever
    mechanisms are switched off: the course's memory limit is a grading rule)."""
    limit = record.policy.memory_bytes
    if limit and record.unbounded_memory():
        _, hard = resource.getrlimit(resource.RLIMIT_DATA)
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _limit_tasks(record: _Record) -> None:
    """The pid namespace's own pid_max (while the worker still holds the capability to write it)."""
    if _pid_max_applies(record):
        try:  # a pids cgroup, where the worker has one, is met first: it says afterwards that it was
            namespaces.limit_tasks(record.policy.process_limit + (PIDS_SLACK if "pids" in record.groups else 0))
        except OSError as exc:
            record.tasks_why = f"its pid_max could not be written: {exc}"
            return
        record.tasks_bounded_by.append("pid_max")


def _subreaper(record: _Record) -> None:
    if not record.held("subreaper"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        record.why_not["subreaper"] = f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}"


def _check_landlock(record: _Record) -> int:
    """The Landlock ABI to use (0: none, and the record says why)."""
    if not record.held("landlock"):
        return 0
    abi, why = landlock.abi_version()
    if why:
        record.why_not["landlock"] = why
        return 0
    if record.policy.max_landlock_abi is not None:
        abi = min(abi, record.policy.max_landlock_abi)
    record.landlock_abi = abi
    record.landlock_parts = {"fs"} | ({"net"} if abi >= landlock.NET_ABI else set()) | (
        {"scopes"} if abi >= landlock.SCOPE_ABI else set())
    return abi


def _ruleset(record: _Record, scratch: mounts.Scratch | None) -> landlock.Ruleset | None:
    """The Landlock ruleset, built now (opening every path, with the rights the worker starts with)."""
    abi = _check_landlock(record)
    if not abi:
        return None
    policy = record.policy
    tcp = landlock.BIND_TCP | (0 if policy.tcp_connect_any else landlock.CONNECT_TCP)
    ruleset = landlock.Ruleset(abi, net=tcp, scopes=landlock.SCOPE_ABSTRACT_UNIX_SOCKET | landlock.SCOPE_SIGNAL)
    group = _GROUP_READ_ONLY if policy.tcp_ports is not None else ()
    for path in (*python_paths(), *_SYSTEM_READ_ONLY, *group, *policy.read_only):
        if os.path.exists(path):
            ruleset.allow_path(path, landlock.READ)
    for path in (*_SYSTEM_READ_WRITE, *policy.devices):
        if os.path.exists(path):
            ruleset.allow_path(path, landlock.READ | landlock.READ_WRITE_FILE)
    for path in (policy.scratch, *policy.kept):
        ruleset.allow_path(path, landlock.fs_rights(abi) & ~landlock.SPECIAL)
    for path in policy.read_by_name:
        ruleset.allow_path(path, landlock.READ_FILE)
    if scratch is not None:
        ruleset.allow_fd(scratch.below, landlock.READ_FILE | landlock.READ_DIR)  # the grader's copy, to fill from
    for port in (policy.tcp_ports or ()) if ruleset.net_handled else ():
        ruleset.allow_port(port, tcp)
    return ruleset


def _unreadable_for_others(paths, read: bool = True, ancestors: bool = True) -> str:
    """The first path a uid with no groups could not reach (as "other"), with the mode in the way; "" if none.

    Every folder on the way must be searchable (unless ``ancestors`` is False: a mount namespace can
    reveal a path whatever folder it is in); with ``read`` the path itself must be readable too.
    """
    for path in paths:
        parts = os.path.abspath(path).split(os.sep)
        for depth in range(2 if ancestors else len(parts), len(parts) + 1):
            here = os.sep.join(parts[:depth]) or os.sep
            st = os.stat(here)
            last = depth == len(parts)
            needs = stat.S_IXOTH if not last or stat.S_ISDIR(st.st_mode) else 0
            needs |= stat.S_IROTH if last and read else 0
            if st.st_mode & needs != needs:
                return f"{here} (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def _revealed_paths(record: _Record) -> tuple[str, ...]:
    """What a uid of the worker's own must reach: what it reads, and its scratch and kept folders."""
    policy = record.policy
    return (*python_paths(), *policy.read_only, *policy.devices, policy.scratch, *policy.kept, *policy.read_by_name)


def _check_uid(record: _Record) -> bool:
    """Whether the worker can become a uid of its own (if not, the record says why)."""
    if not record.held("uid"):
        return False
    if os.geteuid() != 0:
        record.why_not["uid"] = "the grader is not root, so workers keep its uid"
        return False
    policy = record.policy
    if record.held("namespaces"):  # folders in the way are covered (grader.sandbox.mounts.reveal)
        blocked = _unreadable_for_others([*python_paths(), *policy.read_only], ancestors=False)
        remedy = "make it readable by every user"
    else:
        parents = [os.path.dirname(os.path.abspath(p)) for p in (policy.scratch, *policy.kept)]
        blocked = (_unreadable_for_others([*python_paths(), *policy.read_only])
                   or _unreadable_for_others(parents, read=False))
        remedy = ("a Python installed where every user can read it (e.g. /usr or /opt), or a machine that allows "
                  "mount namespaces, gets this layer")
    if blocked:
        record.why_not["uid"] = f"another uid could not read {blocked}, which the worker needs; {remedy}"
    return not blocked


def _drop_privileges(record: _Record, uid: int | None, owned: tuple[str, ...]) -> None:
    """Give up every capability and, as root, become ``uid`` with no groups, owning ``owned`` (its scratch,
    its kept folders)."""
    if uid is not None:
        privileges.own_files(owned, uid)
    try:
        privileges.drop(uid)
    except OSError as exc:
        record.why_not["capabilities"] = f"the worker keeps its capabilities: {exc}"
    if uid is not None and os.getuid() == uid:
        record.uid = uid
    elif uid is not None:
        record.why_not["uid"] = f"setresuid({uid}) failed"


def _check_seccomp(record: _Record) -> bool:
    why = seccomp.availability() if record.held("seccomp") else ""
    if why:
        record.why_not["seccomp"] = why
    return record.held("seccomp")


def _seccomp(record: _Record) -> None:
    if not _check_seccomp(record):
        return
    try:
        seccomp.load(tcp=record.policy.tcp_ports is not None, shared_ipc=record.shared_ipc(),
                     unbounded_memory=record.unbounded_memory())
    except seccomp.SeccompError as exc:
        record.why_not["seccomp"] = str(exc)


def _check_namespaces(record: _Record) -> None:
    if record.held("namespaces"):
        why = namespaces.availability()
        if why:
            record.why_not["namespaces"] = why


def _enter_namespaces(record: _Record) -> int:
    """Move into namespaces of the worker's own where the machine allows (first into its group's network,
    when it has one); returns the holder's pid (this process's own without them). Only the worker
    returns (grader.sandbox.namespaces)."""
    holder = os.getpid()
    if not record.held("namespaces"):
        record.private_network = record.why_not["namespaces"]
        return holder
    if record.policy.network_of:
        try:
            namespaces.join_network(record.policy.network_of)
        except OSError as exc:
            record.private_network = str(exc)
    joined = bool(record.policy.network_of) and not record.private_network  # the group's IPC namespace too
    try:
        return namespaces.enter(ipc=not joined, on_hold=lambda: _leave_groups(record))
    except OSError as exc:
        record.why_not["namespaces"] = f"the kernel refused new namespaces ({exc})"
    return holder


def _mount(record: _Record, uid: int | None) -> tuple[mounts.Scratch | None, int | None]:
    """In the worker's mount namespace: its own /proc, the folders a uid of its own could not pass covered,
    and its private scratch (the current folder too, when that was the scratch). Returns (the private
    scratch, None without one; the uid to take, None where the folders in its way could not be covered)."""
    if not record.held("namespaces"):
        return None, uid
    try:
        mounts.fresh_proc()
    except OSError as exc:
        record.fresh_proc = f"no /proc of its own ({exc})"
    if uid is not None:
        try:
            mounts.reveal(_revealed_paths(record))
        except OSError as exc:
            record.why_not["uid"] = f"the folders in the way of another uid could not be covered ({exc})"
            uid = None
    try:
        scratch = mounts.Scratch(record.policy.scratch, os.geteuid() if uid is None else uid,
                                 os.getegid() if uid is None else uid, record.policy.scratch_bytes)
    except OSError as exc:
        record.scratch_why = str(exc)
        return None, uid
    record.private_scratch = True
    os.chdir(record.policy.scratch)
    return scratch, uid


def _not_linux(record: _Record) -> bool:
    """Every mechanism here is Linux's; elsewhere the record says so for each."""
    if sys.platform.startswith("linux"):
        return False
    record.why_not.update(dict.fromkeys(MECHANISMS, f"{sys.platform} is not Linux"))
    return True


_scratch: mounts.Scratch | None = None  # this worker's private scratch, to fill at its first request


def confine(policy: Policy) -> dict:
    """Apply every layer this machine allows to this process, for good; returns the sandbox record.

    Call it single-threaded (namespaces need that, and Landlock and seccomp confine only the calling
    thread). Where namespaces hold, the caller continues in a new process, the worker of
    grader.sandbox.namespaces. The order matters: mounts and pid_max need the privilege the uid
    and capability drops take away; paths are opened for Landlock while the worker may still read
    them all; the uid is dropped before no_new_privs; seccomp comes last because it would refuse
    nothing earlier steps need.
    """
    global _scratch
    started = time.perf_counter()
    record = _Record(policy)
    if _not_linux(record):
        return record.as_dict(0.0)
    threads = _threads()
    if threads != 1:  # none of them confines (or, for namespaces, allows) threads that already run
        for mechanism in ("landlock", "seccomp", "namespaces"):
            record.why_not.setdefault(mechanism, f"{threads} threads were running; only the calling one would "
                                                 "be confined")
    _join_groups(record)
    holder = _enter_namespaces(record)
    if not record.held("namespaces"):
        _subreaper(record)
    _scratch, uid = _mount(record, UID_BASE + holder if _check_uid(record) else None)
    if _scratch is not None:
        _scratch.fill_so_far()
    _limit_tasks(record)
    ruleset = _ruleset(record, _scratch)
    _drop_privileges(record, uid, (policy.scratch, *policy.kept))
    _set_limits(record)
    _bound_memory(record)
    if ruleset is not None:
        seccomp.no_new_privs()
        ruleset.restrict_self()
    _seccomp(record)
    return record.as_dict((time.perf_counter() - started) * 1000)


def fill_scratch() -> None:
    """Copy into the private scratch what the grader copied below it since the worker confined itself (a
    spare's submission), once; call it before running any student code. A no-op without a private scratch."""
    if _scratch is not None:
        _scratch.fill()


def survey(policy: Policy) -> dict:
    """What :func:`confine` would apply here with ``policy``, without applying anything (cost_ms 0).

    The grader asks this before starting any worker, to refuse a run that ``--require-sandbox``
    rules out and to print what the machine supports.
    """
    record = _Record(policy)
    if not _not_linux(record):
        _check_landlock(record)
        _check_seccomp(record)
        _check_namespaces(record)
        if record.held("cgroups"):
            for controller, why in cgroups.survey().items():
                if why:
                    record.groups_why[controller] = why
                else:
                    record.groups[controller] = cgroups.parents()[0][controller]
        record.private_scratch = record.held("namespaces")
        record.tasks_bounded_by = [name for name, applies in (("pid_max", _pid_max_applies(record)), (
            "RLIMIT_NPROC", _nproc_counts_own(record, _check_uid(record))), (
            "pids cgroup", record.held("limits") and "pids" in record.groups)) if applies]
    return record.as_dict(0.0)


def confine_worker(code: str, probes: str, backend: str, distributed: dict | None, off=(), kept: str = "",
                   memory_mb: int = 0, shared_cache: str = "") -> dict:
    """Confine a worker: it may write its copy of the submission (``code``) and the folder ``kept``
    (its compile cache's outbox, when given), read the ``probes`` copied beside it, and open the files
    of ``shared_cache`` by name; its processes may hold ``memory_mb`` together (0: no bound).

    A process of a multi-process group (``distributed``: its coordinator's ``host:port``, and the pid
    holding the group's own network, ``network``, where it has one) may also bind that port and
    ephemeral ones, and connect to its peers. On a real accelerator (``backend``
    other than cpu) it may open the device nodes in /dev and read /sys and the driver's /proc
    files (worked out from the drivers' documentation, not yet tried on a GPU or TPU).
    """
    ports = (int(distributed["coordinator"].rpartition(":")[2]), 0) if distributed else None
    accelerator = backend != "cpu"
    read_only = (ENGINE_DIR, probes, *(_ACCELERATOR_READ_ONLY if accelerator else ()))
    return confine(Policy(scratch=code, kept=(kept,) if kept else (), read_only=read_only, devices=("/dev",) if accelerator else (),
                          tcp_ports=ports, tcp_connect_any=bool(distributed), off=_mechanisms(off),
                          network_of=(distributed or {}).get("network", 0), memory_bytes=memory_mb << 20,
                          read_by_name=(shared_cache,) if shared_cache else ()))


def _mechanisms(off) -> frozenset[str]:
    """``off`` as mechanism names; "all" stands for every one."""
    return frozenset(MECHANISMS) if "all" in off else frozenset(off)


def print_survey(scratch: str, off) -> None:
    """Print :func:`survey` as one JSON line (for the grader, which asks it in a fresh Python)."""
    print(json.dumps(survey(Policy(scratch=scratch, off=_mechanisms(off)))))
