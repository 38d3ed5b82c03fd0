"""Giving up privilege: a uid of the worker's own when it starts as root, and no capabilities whatever the uid.

A worker that keeps uid 0 (the uid layer switched off or refused) would keep CAP_MKNOD, CAP_KILL,
CAP_SYS_RESOURCE and the rest; one in a user namespace of its own holds every capability of that
namespace. Either way it drops them all, from the bounding set too, before any student code runs;
with no_new_privs set afterwards (grader.sandbox.seccomp), no program it runs gets them back.
"""

from __future__ import annotations

import ctypes
import os
import platform

_PR_CAPBSET_DROP = 24
_CAPABILITY_VERSION_3 = 0x20080522
_CAPSET = {"x86_64": 126, "aarch64": 91, "riscv64": 91, "ppc64le": 184}
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


def drop(uid: int | None) -> None:
    """Become ``uid`` (None: keep this uid) and hold no capability at all: the bounding set is emptied first
    (that needs CAP_SETPCAP), the uid changed next (CAP_SETUID), the other sets last.

    OSError where the kernel refuses (it never does for dropping, short of a seccomp profile)."""
    for cap in range(_last_capability() + 1):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: then there is nothing to drop
    if uid is not None:
        _become(uid)
    number = _CAPSET.get(platform.machine())
    if number is None:
        raise OSError(f"no capset system call number known for {platform.machine()}")
    header, data = _Header(_CAPABILITY_VERSION_3, 0), (_Data * 2)()
    if _libc.syscall(ctypes.c_long(number), ctypes.byref(header), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


def own_files(paths, uid: int) -> None:
    """Give every file and folder under ``paths`` (links not followed) to ``uid``, group ``uid``."""
    for top in paths:
        for folder, dirs, files in os.walk(top):
            for name in (folder, *(os.path.join(folder, n) for n in dirs + files)):
                os.lchown(name, uid, uid)


def _become(uid: int) -> None:
    """Become ``uid`` (gid the same) with no supplementary groups; only root may."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
