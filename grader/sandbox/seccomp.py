"""A seccomp filter for workers: the few system calls student code has no business making fail with EPERM.

Landlock governs files, TCP ports, abstract unix sockets and signals. What it does not cover is
closed here, in a classic BPF program built by hand (libseccomp's Python bindings are not on PyPI):

- other processes: ptrace, process_vm_readv/writev, pidfd_open, pidfd_getfd, pidfd_send_signal,
  process_madvise, process_mrelease, kcmp (Landlock's signal scope does not stop most of these);
  and prlimit64, setpriority, sched_setaffinity / setscheduler / setparam / setattr, ioprio_set,
  migrate_pages, move_pages and get_robust_list only on the calling process itself (pid 0; for
  setpriority and ioprio_set, a process rather than a group or a user). A worker in a pid namespace
  of its own cannot name another process anyway (grader.sandbox.namespaces); this is the second
  layer, and the only one where no namespace can be had;
- special files: mknod and mknodat (Landlock also gives the scratch no right to make them);
- sockets: socket() only for the families a worker needs: none, or for a multi-process group TCP
  over IPv4/IPv6 (whose ports Landlock restricts) and NETLINK_ROUTE (gloo lists the interfaces
  with getifaddrs; without CAP_NET_ADMIN it can only read). socketpair() only AF_UNIX. So no UDP,
  raw or packet sockets, and no unix socket that could connect to a path outside;
- ways around the filter or the sandbox: io_uring (its operations bypass seccomp), new namespaces
  (unshare, setns, clone with CLONE_NEW*), bpf, perf_event_open, userfaultfd, keyrings,
  open_by_handle_at, mount, chroot, pivot_root. clone3 gets ENOSYS, as in Docker's profile: its
  flags sit in memory a filter cannot read, and glibc falls back to clone, whose flags it can.

- file events: inotify and fanotify, whose watches would report what other processes do to files
  outside the scratch (a classmate's, the gradebook) however Landlock confines opening them;
- the kernel log (syslog; /dev/kmsg is outside Landlock's paths), which names other workers' processes
  and control groups (an OOM kill's report) wherever ``kernel.dmesg_restrict`` is 0;
- kernel objects nothing else keeps to the worker (:func:`load`'s ``shared_ipc`` and ``unbounded_memory``):
  System V IPC and POSIX message queues where the worker has no IPC namespace of its own (they would
  be shared with every process and outlive it), and memfd_create and System V shared memory where no
  memory cgroup counts them (RLIMIT_DATA does not).

Denied calls return an errno instead of killing the process, so the student's code sees an
ordinary OSError. The filter also refuses every call made through another architecture's entry
(i386 ``int 0x80``, x32), whose numbers mean different calls.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
import struct

_PR_SET_NO_NEW_PRIVS, _PR_GET_SECCOMP, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 21, 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ, _JSET, _JGE, _AND, _RET = 0x20, 0x15, 0x45, 0x35, 0x54, 0x06
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32  # offsets in struct seccomp_data (low 32 bits of each argument:
# a pid, like every argument checked here, is a 32-bit int the kernel reads from the low half)
_X32_BIT = 0x40000000
_CLONE_NEW_ANY = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_SOCK_TYPE_MASK = 0xF
_NETLINK_ROUTE = 0

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
          "process_madvise", "process_mrelease", "kcmp", "io_uring_setup", "io_uring_enter", "io_uring_register",
          "unshare", "setns", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
          "open_by_handle_at", "mount", "umount2", "chroot", "pivot_root", "mknod", "mknodat",
          "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark", "syslog")
SHARED_IPC = ("shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
              "semctl", "semtimedop", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
              "mq_getsetattr")
UNBOUNDED_MEMORY = ("memfd_create", "memfd_secret", "shmget")
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1
# Calls that name a process: allowed only with these (argument offset, value) pairs, i.e. on the caller itself.
ONLY_ITSELF = {
    "prlimit64": ((_ARG0, 0),), "sched_setaffinity": ((_ARG0, 0),), "sched_setscheduler": ((_ARG0, 0),),
    "sched_setparam": ((_ARG0, 0),), "sched_setattr": ((_ARG0, 0),), "migrate_pages": ((_ARG0, 0),),
    "move_pages": ((_ARG0, 0),), "get_robust_list": ((_ARG0, 0),),
    "setpriority": ((_ARG0, _PRIO_PROCESS), (_ARG1, 0)), "ioprio_set": ((_ARG0, _IOPRIO_WHO_PROCESS), (_ARG1, 0)),
}

# System call numbers: x86_64 from asm/unistd_64.h, aarch64 from asm-generic/unistd.h.
_TABLES = {
    "x86_64": (0xC000003E, True, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "unshare": 272, "setns": 308,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248,
        "request_key": 249, "open_by_handle_at": 304, "mount": 165, "umount2": 166, "chroot": 161,
        "pivot_root": 155, "clone": 56, "clone3": 435, "socket": 41, "socketpair": 53, "pidfd_open": 434,
        "pidfd_send_signal": 424, "process_madvise": 440, "process_mrelease": 448, "mknod": 133, "mknodat": 259,
        "prlimit64": 302, "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142,
        "sched_setattr": 314, "migrate_pages": 256, "move_pages": 279, "get_robust_list": 274, "setpriority": 141,
        "ioprio_set": 251, "inotify_init": 253, "inotify_init1": 294, "inotify_add_watch": 254,
        "fanotify_init": 300, "fanotify_mark": 301, "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67,
        "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semget": 64, "semop": 65, "semctl": 66,
        "semtimedop": 220, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
        "mq_notify": 244, "mq_getsetattr": 245, "memfd_create": 319, "memfd_secret": 447, "syslog": 103}),
    "aarch64": (0xC00000B7, False, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "unshare": 97, "setns": 268,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219, "add_key": 217,
        "request_key": 218, "open_by_handle_at": 265, "mount": 40, "umount2": 39, "chroot": 51,
        "pivot_root": 41, "clone": 220, "clone3": 435, "socket": 198, "socketpair": 199, "pidfd_open": 434,
        "pidfd_send_signal": 424, "process_madvise": 440, "process_mrelease": 448, "mknodat": 33,
        "prlimit64": 261, "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118,
        "sched_setattr": 274, "migrate_pages": 238, "move_pages": 239, "get_robust_list": 100, "setpriority": 140,
        "ioprio_set": 30, "inotify_init1": 26, "inotify_add_watch": 27, "fanotify_init": 262,
        "fanotify_mark": 263, "shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197, "msgget": 186,
        "msgsnd": 189, "msgrcv": 188, "msgctl": 187, "semget": 190, "semop": 193, "semctl": 191,
        "semtimedop": 192, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183,
        "mq_notify": 184, "mq_getsetattr": 185, "memfd_create": 279, "memfd_secret": 447, "syslog": 116}),
}


class SeccompError(OSError):
    """The filter could not be loaded; ``str()`` says why."""


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_libc = ctypes.CDLL(None, use_errno=True)
_prctl = getattr(_libc, "prctl", None)  # Linux only; elsewhere availability() says so
if _prctl is not None:
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def availability() -> str:
    """"" where a filter can be loaded here, else why not (for the sandbox record)."""
    if _prctl is None:
        return "this system has no prctl (not Linux)"
    if platform.machine() not in _TABLES:
        return f"no system call table for {platform.machine()}"
    if _prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return f"the kernel has no seccomp filters ({os.strerror(ctypes.get_errno())})"
    return ""


class _Program:
    """A BPF program with forward jumps to named labels, resolved when assembled."""

    def __init__(self):
        self.code: list[tuple[int, object, object, int]] = []
        self.labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, value: int, if_true: str | None, if_false: str | None = None) -> None:
        """``op value``: go to ``if_true`` / ``if_false`` (None: the next instruction)."""
        self.code.append((op, if_true, if_false, value))

    def mask(self, value: int) -> None:
        self.code.append((_AND, 0, 0, value))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def ret(self, value: int) -> None:
        self.code.append((_RET, 0, 0, value))

    def assemble(self) -> bytes:
        out = []
        for i, (op, jt, jf, k) in enumerate(self.code):
            def offset(target):
                return 0 if target in (None, 0) else self.labels[target] - i - 1
            out.append(struct.pack("=HBBI", op, offset(jt), offset(jf), k))
        return b"".join(out)


_ABSENT = {"aarch64": {"mknod", "inotify_init"}}  # denied calls an architecture does not have (aarch64 has only
# mknodat and inotify_init1)


def denied(shared_ipc: bool = False, unbounded_memory: bool = False) -> tuple[str, ...]:
    """The calls refused outright: DENIED, and SHARED_IPC / UNBOUNDED_MEMORY where nothing else keeps
    those objects to the worker."""
    extra = (SHARED_IPC if shared_ipc else ()) + (UNBOUNDED_MEMORY if unbounded_memory else ())
    return DENIED + tuple(dict.fromkeys(n for n in extra if n not in DENIED))


def program(tcp: bool, shared_ipc: bool = False, unbounded_memory: bool = False) -> bytes:
    """The filter for this machine's architecture; ``tcp``: a worker that may open TCP sockets; ``shared_ipc``:
    one without an IPC namespace of its own; ``unbounded_memory``: one without a memory cgroup."""
    arch, has_x32, numbers = _TABLES[platform.machine()]
    p = _Program()
    p.load(_ARCH)
    p.jump(_JEQ, arch, None, "deny")
    p.load(_NR)
    if has_x32:
        p.jump(_JGE, _X32_BIT, "deny")
    for name in denied(shared_ipc, unbounded_memory):
        if name not in _ABSENT.get(platform.machine(), ()):  # a name missing from a table is a KeyError
            p.jump(_JEQ, numbers[name], "deny")
    for name in ONLY_ITSELF:
        p.jump(_JEQ, numbers[name], f"itself:{name}")
    p.jump(_JEQ, numbers["clone3"], "enosys")
    p.jump(_JEQ, numbers["clone"], "clone")
    p.jump(_JEQ, numbers["socket"], "socket")
    p.jump(_JEQ, numbers["socketpair"], "socketpair")
    p.ret(_RET_ALLOW)
    for name, required in ONLY_ITSELF.items():
        p.label(f"itself:{name}")
        for offset, value in required:
            p.load(offset)
            p.jump(_JEQ, value, None, "deny")
        p.ret(_RET_ALLOW)
    p.label("clone")
    p.load(_ARG0)
    p.jump(_JSET, _CLONE_NEW_ANY, "deny", "allow")
    p.label("socket")
    p.load(_ARG0)
    if tcp:  # IPv4 or IPv6, and a stream (TCP): the ports are Landlock's to restrict
        p.jump(_JEQ, socket.AF_INET, "stream")
        p.jump(_JEQ, socket.AF_INET6, "stream")
        p.jump(_JEQ, socket.AF_NETLINK, None, "deny")
        p.load(_ARG2)
        p.jump(_JEQ, _NETLINK_ROUTE, "allow", "deny")
        p.label("stream")
        p.load(_ARG1)
        p.mask(_SOCK_TYPE_MASK)
        p.jump(_JEQ, socket.SOCK_STREAM, "allow", "deny")
    else:
        p.ret(_RET_ERRNO | errno.EPERM)
    p.label("socketpair")
    p.load(_ARG0)
    p.jump(_JEQ, socket.AF_UNIX, "allow", "deny")
    p.label("deny")
    p.ret(_RET_ERRNO | errno.EPERM)
    p.label("enosys")
    p.ret(_RET_ERRNO | errno.ENOSYS)
    p.label("allow")
    p.ret(_RET_ALLOW)
    return p.assemble()


def no_new_privs() -> None:
    """Set no_new_privs (needed by seccomp and Landlock without CAP_SYS_ADMIN; setuid binaries lose their bit)."""
    if _prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SeccompError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def load(tcp: bool, shared_ipc: bool = False, unbounded_memory: bool = False) -> None:
    """Install the filter (see :func:`program`) on this thread and everything it starts; it cannot be removed."""
    code = program(tcp, shared_ipc, unbounded_memory)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Filter(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    no_new_privs()
    if _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise SeccompError(err, f"prctl(PR_SET_SECCOMP) refused the filter: {os.strerror(err)}")
