"""What a worker mounts in its own mount namespace (grader.sandbox.namespaces), before it confines itself.

- A fresh /proc of its own pid namespace: no other process is even listed.
- A private scratch: a tmpfs of SCRATCH_BYTES and SCRATCH_FILES mounted over the folder the
  grader copied the submission into (nodev, nosuid), filled from that copy. What the student's
  code writes counts against that size, whatever the uid, reaches no other worker (each has its own), and is
  gone with the worker. The grader's copy below stays readable through a descriptor opened before the mount,
  so a worker started before the copy existed (a spare, grader.workers.spares) fills its
  scratch at its first request (:meth:`Scratch.fill`).
- As root with a uid of its own to take: a folder that uid could not pass (a Python under /root,
  mode 0700, as pyenv or conda install it) is covered with a tmpfs holding only the paths the worker
  needs, bind-mounted at the same places. Paths stay the same, the rest of the folder is out of
  sight, and Landlock stays the file boundary.
"""

from __future__ import annotations

import os
import stat

from grader.sandbox.namespaces import mount, unmount

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC = 0x2, 0x4, 0x8, 0x1000, 0x4000
SCRATCH_BYTES = 256 << 20
SCRATCH_FILES = 16384


def fresh_proc() -> None:
    """Mount a /proc of this pid namespace over the grader's (OSError where the kernel refuses, e.g.
    in a container that masks parts of /proc from a user namespace)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def closed_ancestor(path: str) -> str:
    """The first folder on the way to ``path`` that a uid with no groups could not pass ("" if none)."""
    parts = os.path.realpath(path).split(os.sep)
    for depth in range(2, len(parts)):
        here = os.sep.join(parts[:depth])
        if not os.stat(here).st_mode & stat.S_IXOTH:
            return here
    return ""


def reveal(paths) -> None:
    """Cover every closed ancestor of ``paths`` with a tmpfs holding just those paths (bind-mounted where
    they were); a covering that fails part-way is taken off again before the OSError goes on."""
    needed: dict[str, list[str]] = {}
    for path in {os.path.realpath(p) for p in paths if os.path.exists(p)}:
        closed = closed_ancestor(path)
        if closed:
            needed.setdefault(closed, []).append(path)
    for closed, paths_below in needed.items():
        wanted = [p for p in paths_below if not any(p != q and p.startswith(q + os.sep) for q in paths_below)]
        held = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in wanted}
        try:
            mount("tmpfs", closed, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
            try:
                for path, fd in held.items():
                    if stat.S_ISDIR(os.fstat(fd).st_mode):
                        os.makedirs(path, exist_ok=True)
                    else:
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        open(path, "w").close()
                    mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
            except OSError:
                unmount(closed)  # half a covering would hide what the worker needs: the folder as it was
                raise
        finally:
            for fd in held.values():
                os.close(fd)


class Scratch:
    """The worker's private scratch over the grader's copy at ``path`` (see the module's docstring)."""

    def __init__(self, path: str, uid: int, gid: int, size: int = SCRATCH_BYTES):
        self.path = path
        self.below = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the grader's copy
        try:
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV,
                  f"size={size},nr_inodes={SCRATCH_FILES},mode=0700,uid={uid},gid={gid}")
        except OSError:
            os.close(self.below)
            raise

    def fill(self) -> None:
        """Copy what the grader's copy holds and this scratch lacks, then let go of the grader's copy
        (before any student code runs: the first request calls it)."""
        if self.below < 0:
            return
        _copy_missing(self.below, self.path)
        os.close(self.below)
        self.below = -1

    def fill_so_far(self) -> None:
        """Copy what the grader's copy holds now, keeping it open for :meth:`fill` (a spare's copy comes later)."""
        _copy_missing(self.below, self.path)


def _open_below(parent_fd: int, name: str, flags: int) -> int:
    return os.open(name, flags | os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)


def _copy_missing(source_fd: int, target: str) -> None:
    """Copy every folder and regular file under the folder ``source_fd`` that ``target`` lacks (links and
    special files are left out: the grader's copy has none)."""
    for entry in os.scandir(source_fd):
        dest = os.path.join(target, entry.name)
        if entry.is_dir(follow_symlinks=False):
            if not os.path.lexists(dest):
                os.mkdir(dest, 0o755)
            if os.path.isdir(dest) and not os.path.islink(dest):
                sub = _open_below(source_fd, entry.name, os.O_DIRECTORY)
                try:
                    _copy_missing(sub, dest)
                finally:
                    os.close(sub)
        elif entry.is_file(follow_symlinks=False) and not os.path.lexists(dest):
            src = _open_below(source_fd, entry.name, 0)
            try:
                out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                try:
                    while chunk := os.read(src, 1 << 20):
                        os.write(out, chunk)
                finally:
                    os.close(out)
            finally:
                os.close(src)
