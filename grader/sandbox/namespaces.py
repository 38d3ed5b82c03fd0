"""A pid and a mount namespace of the worker's own (and, for a normal user, a user namespace first).

In its own pid namespace the worker cannot name a process outside its tree: kill, ptrace,
prlimit, setpriority, sched_setaffinity, ioprio_set or pidfd_open on the grader, the zygote or a
classmate's worker find no such process (ESRCH), and a fresh /proc shows only its own. When the
namespace's init ends, the kernel kills everything left in it, so nothing the student started
outlives the worker. Its own mount namespace lets the worker mount a private /proc, a size-capped
scratch and (as root) hide folders a uid of its own could not pass (grader.sandbox.mounts), none
of which the grader or anyone else sees. A normal user gets these through a user namespace in
which its uid maps to itself: the worker keeps its uid, and its processes are counted in that
namespace (RLIMIT_NPROC counts per user namespace since Linux 5.14), not with the grader's.

:func:`enter` leaves three processes where there was one:

- the *holder*: the process the grader started or the zygote forked. It stays in the grader's
  namespaces (the grader and the zygote know only its pid), holds nothing of the worker's, waits
  for the worker, its child, and ends the way it ended (exit code or signal);
- the *init*, pid 1 of the new pid namespace: ``/bin/sh`` reading a pipe only the holder writes,
  spawned without copying the holder's memory (posix_spawn). It ends when the holder closes that
  pipe, once the worker is gone, or when the holder dies; its end ends the namespace: the kernel
  kills everything left in it. What the student's code orphans is adopted by it;
- the *worker*, pid 2: the only one that returns from :func:`enter`. It dies with the holder
  (PR_SET_PDEATHSIG).

Why a separate init: the kernel drops every signal a namespace's init has no handler for when it
comes from inside, so a worker at pid 1 would survive ``os.kill(os.getpid(), SIGKILL)`` and turn
``abort()`` into a SIGSEGV. At pid 2 it dies like any process.

The process limit: since Linux 6.14 each pid namespace has its own pid_max, so writing it bounds
the tasks (threads included) in the worker's namespace whatever the uid. Before 6.14 the file is
the machine's (a root worker would lower it for everyone), so it is left alone there.

A multi-process group's processes talk over TCP on localhost, to ports nobody knows in advance
(gloo's). So the group gets a network of its own: :func:`hold_network`, run by the grader in a
fresh Python, makes a network namespace with only a loopback (and a host name, ``localhost``, that
resolves to it), and each of the group's processes joins it (:func:`join_network`) before it enters
its own namespaces. Its connections reach the group and nothing else on the machine: no other
group's coordinator, no port of the grader's.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import signal
import socket
import struct
import sys
from collections.abc import Callable

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWIPC = 0x04000000, 0x40000000, 0x08000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
_PR_SET_PDEATHSIG = 1
PID_MAX_PER_NAMESPACE = (6, 14)  # the first kernel whose pid namespaces each have their own pid_max
LEAST_PID_MAX = 301  # the kernel refuses less
INIT = ("/bin/sh", "-c", "read _")  # pid 1 of a worker's namespace: lives until its stdin ends

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); OSError naming the target when the kernel refuses."""
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {fstype or ''} on {target}")


MNT_DETACH = 2


def unmount(target: str) -> None:
    """umount2(``target``, MNT_DETACH); OSError naming the target when the kernel refuses."""
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def _unshare_as_self(flags: int) -> None:
    """unshare(``flags``); a normal user first gets a user namespace in which its ids map to themselves."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(flags | (CLONE_NEWUSER if uid != 0 else 0)), "unshare")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)


def _unshare(ipc: bool = True) -> None:
    """Unshare a pid, a mount and (with ``ipc``) an IPC namespace, and stop mounts from propagating back to the
    grader's namespace."""
    _unshare_as_self(CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWIPC if ipc else 0))
    mount(None, "/", None, _MS_REC | _MS_PRIVATE)


def _quiet() -> None:
    """Nothing of the worker's stays open here, and no signal from inside the namespace ends this process."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)


def _close_all_but(keep: int) -> None:
    os.closerange(3, keep)
    os.closerange(keep + 1, max(keep + 2, os.sysconf("SC_OPEN_MAX")))


def _spawn_init(lifeline: int) -> int:
    """The namespace's init (INIT), its stdin ``lifeline``, /dev/null for output, none of the worker's pipes."""
    others = [int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2 and int(fd) != lifeline]
    actions = [(os.POSIX_SPAWN_DUP2, lifeline, 0), (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_DUP2, 1, 2), *((os.POSIX_SPAWN_CLOSE, fd) for fd in others)]
    return os.posix_spawn(INIT[0], list(INIT), {}, file_actions=actions)


def _end_like(status: int) -> None:
    """Exit the way a child with wait status ``status`` ended: the same exit code, or the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the worker dumped no core; nor does its holder
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _hold(worker: int, init: int, lifeline: int, on_hold: Callable[[], None]) -> None:
    """The holder: ``on_hold()``, wait for the worker; then end the namespace (its init reads the end of
    ``lifeline``) and end as the worker did."""
    on_hold()
    _close_all_but(lifeline)
    _quiet()
    _, status = os.waitpid(worker, 0)
    os.close(lifeline)
    os.waitpid(init, 0)  # the kernel has killed whatever the worker left in the namespace
    _end_like(status)


def enter(ipc: bool = True, on_hold: Callable[[], None] = lambda: None) -> int:
    """Move into namespaces of the worker's own (see the module's docstring); returns the holder's pid.

    ``ipc``: an IPC namespace of its own too (not for a process of a multi-process group that joined its
    group's, :func:`join_network`). ``on_hold``: what the holder does first, once the worker is started
    (leave the worker's control groups, grader.cgroups.leave).
    Raises OSError, before anything has changed, where this machine or its seccomp profile refuses
    the namespaces. Only the worker returns; call it single-threaded (unshare requires that).
    """
    if not os.access(INIT[0], os.X_OK):
        raise OSError(2, f"no {INIT[0]} to be the init of the worker's pid namespace")
    holder = os.getpid()
    _unshare(ipc)
    lifeline_r, lifeline_w = os.pipe()
    init = _spawn_init(lifeline_r)  # the namespace's first process: its pid 1
    os.close(lifeline_r)
    worker = os.fork()
    if worker:
        _hold(worker, init, lifeline_w, on_hold)
    os.close(lifeline_w)
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    return holder


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def hold_network() -> None:
    """A multi-process group's network and IPC namespace (see the module's docstring), for as long as stdin
    stays open: System V objects and POSIX message queues its processes make are shared inside the group
    only, and die with it.

    Prints ``ready`` once the namespace is made, or ``failed: why`` (and exits) where it cannot be.
    Dies with the grader that started it.
    """
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        _unshare_as_self(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC)
        socket.sethostname("localhost")
        _loopback_up()
    except OSError as exc:
        print(f"failed: {exc}", flush=True)
        return
    print("ready", flush=True)
    sys.stdin.read()


def join_network(holder: int) -> None:
    """Enter the network, host name and IPC namespaces of the group's :func:`hold_network` process ``holder``
    (a normal user: its user namespace first, whose owner it is). Single-threaded callers only."""
    for kind, flag in ((("user", CLONE_NEWUSER),) if os.geteuid() != 0 else ()) + (
            ("uts", CLONE_NEWUTS), ("net", CLONE_NEWNET), ("ipc", CLONE_NEWIPC)):
        fd = os.open(f"/proc/{holder}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _check(_libc.setns(fd, flag), f"setns({kind})")
        finally:
            os.close(fd)


def kernel_at_least(version: tuple[int, int]) -> bool:
    """Whether the running kernel is ``version`` (major, minor) or newer."""
    release = os.uname().release.split("-")[0].split(".")
    try:
        return (int(release[0]), int(release[1])) >= version
    except (IndexError, ValueError):
        return False


def per_namespace_pid_max() -> bool:
    """Whether this kernel gives each pid namespace its own pid_max (else the file is the machine's)."""
    return kernel_at_least(PID_MAX_PER_NAMESPACE)


def limit_tasks(count: int) -> None:
    """At most ``count`` tasks (processes and threads, the init included) in this pid namespace, at least
    LEAST_PID_MAX - 1. Only on a kernel with a pid_max per namespace (per_namespace_pid_max)."""
    with open("/proc/sys/kernel/pid_max", "w") as f:
        f.write(str(max(count + 1, LEAST_PID_MAX)))


def availability() -> str:
    """"" where a worker can enter namespaces of its own here, else why not (for the sandbox record).

    Asked of a child, which tries and exits, so the caller's own namespaces stay as they are.
    """
    if not hasattr(os, "fork") or not hasattr(_libc, "unshare"):
        return "this system has no namespaces (not Linux)"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        why = b""
        try:
            _unshare()
        except OSError as exc:
            why = str(exc).encode()
        os.write(w, why)
        os._exit(0)
    os.close(w)
    why = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return f"the kernel refused new namespaces ({why})" if why else ""
