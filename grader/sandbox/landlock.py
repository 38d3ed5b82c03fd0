"""Landlock, through its three system calls: which files a worker may open, which TCP ports, what it may reach.

The Landlock PyPI package knows filesystem rules only; the worker also needs TCP port rules (ABI 4)
and the abstract-unix-socket and signal scopes (ABI 6), so this is a small ctypes binding of the
kernel's own interface (include/uapi/linux/landlock.h). Every right the running kernel's ABI knows
is *handled* (denied unless a rule allows it); rights a newer kernel adds are unknown here, so
they stay allowed, which is Landlock's documented best-effort behaviour.

A ruleset only takes effect in :func:`Ruleset.restrict_self`, for the calling thread and every
process it starts later; it cannot be undone. The caller must have set no_new_privs (or hold
CAP_SYS_ADMIN) and should be single-threaded: other threads keep their old rights.
"""

from __future__ import annotations

import ctypes
import os
import platform
import stat

_SYSCALLS = {  # landlock_create_ruleset, landlock_add_rule, landlock_restrict_self (same on every arch since 5.13)
    "x86_64": (444, 445, 446), "aarch64": (444, 445, 446), "riscv64": (444, 445, 446), "ppc64le": (444, 445, 446),
}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

# Filesystem rights, with the ABI that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}

READ = EXECUTE | READ_FILE | READ_DIR
READ_WRITE_FILE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV  # a device such as /dev/null
SPECIAL = MAKE_CHAR | MAKE_BLOCK | MAKE_FIFO | MAKE_SOCK | IOCTL_DEV  # device nodes and other special files

# Network rights (ABI 4) and scopes (ABI 6).
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
NET_ABI, SCOPE_ABI = 4, 6


class LandlockError(OSError):
    """A Landlock call failed; ``str()`` names the call and the kernel's reason."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _numbers() -> tuple[int, int, int] | None:
    return _SYSCALLS.get(platform.machine())


def _call(number: int, *args) -> int:
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, os.strerror(err))
    return result


def abi_version() -> tuple[int, str]:
    """(ABI version, "") where Landlock works, else (0, why not) in words for the sandbox record."""
    numbers = _numbers()
    if numbers is None:
        return 0, f"no Landlock system call numbers known for {platform.machine()}"
    version = _libc.syscall(ctypes.c_long(numbers[0]), None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if version >= 0:
        return int(version), ""
    err = ctypes.get_errno()
    reasons = {38: "the kernel has no Landlock (ENOSYS)",
               95: "Landlock is built in but not enabled at boot (EOPNOTSUPP)",
               1: "a seccomp profile refuses Landlock's system calls (EPERM)"}
    return 0, reasons.get(err, f"landlock_create_ruleset failed: {os.strerror(err)}")


def fs_rights(abi: int) -> int:
    """Every filesystem right ABI ``abi`` knows (ABI 4 and 6 added none)."""
    return _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= abi)]


class Ruleset:
    """One Landlock ruleset being built: handled rights first, then rules that allow some back."""

    def __init__(self, abi: int, net: int, scopes: int):
        """Handle every filesystem right of ``abi``, and the TCP rights ``net`` and ``scopes`` where it has them."""
        self.abi = abi
        self.fs_handled = fs_rights(abi)
        self.net_handled = net if abi >= NET_ABI else 0
        self.scoped = scopes if abi >= SCOPE_ABI else 0
        attr = _RulesetAttr(self.fs_handled, self.net_handled, self.scoped)
        # An older kernel accepts the full struct as long as the fields it does not know are zero.
        self.fd = _call(_numbers()[0], ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))

    def allow_path(self, path: str, rights: int) -> None:
        """Allow ``rights`` (masked to what is handled; a file gets no directory rights) beneath ``path``."""
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        try:
            self.allow_fd(fd, rights)
        finally:
            os.close(fd)

    def allow_fd(self, fd: int, rights: int) -> None:
        """Allow ``rights`` beneath the file or folder open at ``fd`` (one no path may reach any more)."""
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
        attr = _PathBeneathAttr(rights & self.fs_handled, fd)
        _call(_numbers()[1], ctypes.c_int(self.fd), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(attr),
              ctypes.c_uint32(0))

    def allow_port(self, port: int, rights: int) -> None:
        """Allow binding and/or connecting TCP ``port`` (0: binding an ephemeral port)."""
        attr = _NetPortAttr(rights & self.net_handled, port)
        _call(_numbers()[1], ctypes.c_int(self.fd), ctypes.c_int(_RULE_NET_PORT), ctypes.byref(attr),
              ctypes.c_uint32(0))

    def restrict_self(self) -> None:
        """Enforce the ruleset on this thread and all it starts from now on, for good."""
        try:
            _call(_numbers()[2], ctypes.c_int(self.fd), ctypes.c_uint32(0))
        finally:
            os.close(self.fd)
