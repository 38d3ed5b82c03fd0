"""The three setups the isolation catalogue (test_isolation.py) grades in, made here, and a batch run in one.

- ``root-readable``: root, with a Python every user can read: a venv made here from a system
  python3.X of this Python's minor version, its site-packages this project's (so the engine and
  JAX are the same);
- ``root-private``: root, with this machine's Python where every user cannot read it (pyenv or
  conda under /root, mode 0700), the setup that used to cost the uid layer;
- ``user``: an unprivileged user, made here with useradd, running the readable venv; where the
  tests do not run as root, this is the user running them, with this Python.

A setup that cannot be had here is skipped with the reason. Each setup has a work folder its user
owns, with the toy course, the class and the gradebooks. A batch runs under a subreaper
(PR_SET_CHILD_SUBREAPER) that collects whatever outlives it: the catalogue's check that no
process outlives grading.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import ROOT
from grader import cgroups
from grader.sandbox import confine

SETUPS = ("root-readable", "root-private", "user")
USER = "pmap-isolation"  # the unprivileged user the tests make (a system account, no home, no shell)
MINOR = f"{sys.version_info.major}.{sys.version_info.minor}"

# Runs `grade ARGS` under a subreaper; prints its exit code and output, and what was left running after it.
_UNDER_SUBREAPER = r"""
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the batch come here
proc = subprocess.run([sys.executable, "-c", "from grader.cli import main; main()", *sys.argv[1:]],
                      capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL)
def left():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(f"{pid} {cmdline[:200]}")
    return found
deadline = time.monotonic() + 3
while left() and time.monotonic() < deadline:  # what a pid namespace's end is still killing
    time.sleep(0.05)
survivors = left()
for entry in survivors:
    os.kill(int(entry.split()[0]), signal.SIGKILL)
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
print(json.dumps({"code": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr, "left": survivors}))
"""


@dataclass
class BatchRun:
    code: int
    stdout: str
    stderr: str
    left: list[str]  # processes that outlived the batch (pid and command line)
    book: Path
    course: Path
    groups_before: set[str]  # the stale control groups (of dead graders) there were before the batch (grader.cgroups)


@dataclass
class Setup:
    name: str
    python: str
    uid: int | None  # the user it runs as (None: as the tests)
    work: Path
    bystanders: list[subprocess.Popen] = field(default_factory=list)

    def _become(self):
        if self.uid is None:
            return None
        uid, gid = self.uid, pwd.getpwuid(self.uid).pw_gid

        def become():
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        return become

    def env(self) -> dict[str, str]:
        tmp = self.work / "tmp"
        return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.work), "LANG": "C.UTF-8",
                "TMPDIR": str(tmp)}

    def own(self, path: Path) -> Path:
        """Give ``path`` (and what is under it) to this setup's user."""
        if self.uid is not None:
            gid = pwd.getpwuid(self.uid).pw_gid
            for folder, dirs, files in os.walk(path):
                for name in (folder, *(os.path.join(folder, n) for n in dirs + files)):
                    os.lchown(name, self.uid, gid)
        return path

    def batch(self, klass: Path, course: Path, book: Path, *args: str, timeout: float = 600) -> BatchRun:
        """``grade batch`` of ``klass`` (of ``course``) into ``book`` as this setup's user, with its Python."""
        groups_before = set(cgroups.stale())
        proc = subprocess.run([self.python, "-c", _UNDER_SUBREAPER, "batch", str(klass), "--course", str(course),
                               "--gradebook", str(book), *args], cwd=ROOT, env=self.env(), preexec_fn=self._become(), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0 and proc.stdout.strip(), proc.stdout + proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        return BatchRun(out["code"], out["stdout"], out["stderr"], out["left"], book, course, groups_before)

    def run_python(self, code: str) -> str:
        """What ``code`` prints, run by this setup's Python as its user."""
        proc = subprocess.run([self.python, "-c", code], cwd=ROOT, env=self.env(), preexec_fn=self._become(),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def bystander(self) -> int:
        """A process of this setup's user outside the batch (a classmate's grading, say): its pid."""
        proc = subprocess.Popen(["sleep", "600"], preexec_fn=self._become(), stdin=subprocess.DEVNULL)
        self.bystanders.append(proc)
        return proc.pid

    def close(self) -> None:
        for proc in self.bystanders:
            proc.kill()
            proc.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def _world_folder(prefix: str) -> Path:
    """A new folder in /tmp every user can pass (pytest's own is root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    return folder


def _readable(python: str) -> bool:
    probe = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from grader.sandbox import confine; "
             "print(confine._unreadable_for_others(confine.python_paths()))")
    out = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip() == ""


def readable_venv(folder: Path) -> tuple[str | None, str]:
    """(a venv's python every user can read, "") or (None, why not): the venv is made from a system
    python3.X of this minor version, and its site-packages is this environment's (a link)."""
    site = sysconfig.get_paths()["purelib"]
    if confine._unreadable_for_others([site]):
        return None, f"this environment's site-packages ({site}) is not readable by other users"
    for base in (f"/usr/bin/python{MINOR}", f"/usr/local/bin/python{MINOR}", f"/opt/python{MINOR}/bin/python{MINOR}"):
        if os.path.exists(base) and _readable(base):
            break
    else:
        return None, f"no python{MINOR} that every user can read in /usr/bin, /usr/local/bin or /opt"
    venv = folder / "venv"
    made = subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        return None, f"{base} -m venv failed: {made.stderr.strip()[-300:]}"
    own_site = venv / "lib" / f"python{MINOR}" / "site-packages"
    shutil.rmtree(own_site)
    own_site.symlink_to(site)
    python = str(venv / "bin" / "python")
    works = subprocess.run([python, "-c", "import jax, grader"], capture_output=True, text=True, cwd="/")
    if works.returncode != 0:
        return None, f"the venv cannot import jax and grader: {works.stderr.strip()[-300:]}"
    return python, ""


def unprivileged_user() -> tuple[int | None, str]:
    """(uid, "") of the test user, made now if needed, or (None, why not)."""
    try:
        return pwd.getpwnam(USER).pw_uid, ""
    except KeyError:
        pass
    if not shutil.which("useradd"):
        return None, "no useradd on this machine to make an unprivileged user"
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                          capture_output=True, text=True)
    try:
        return pwd.getpwnam(USER).pw_uid, ""  # made now, or by a test process running beside this one
    except KeyError:
        return None, f"useradd failed: {made.stderr.strip()}"


class Factory:
    """Makes each setup once per session (the readable venv is shared by two of them)."""

    def __init__(self):
        self.root = _world_folder("isolation-setups-")
        self._venv: tuple[str | None, str] | None = None
        self.made: list[Setup] = []

    def venv(self) -> tuple[str | None, str]:
        if self._venv is None:
            self._venv = readable_venv(self.root)
        return self._venv

    def make(self, name: str) -> Setup:
        root = os.geteuid() == 0
        if name == "user" and not root:
            return self._setup(name, sys.executable, None)  # the tests' own user is the unprivileged one
        if not root:
            pytest.skip(f"{name} needs the tests to run as root")
        if name == "root-private":
            if not confine._unreadable_for_others(confine.python_paths()):
                pytest.skip("this machine's Python is readable by every user (root-readable covers it)")
            return self._setup(name, sys.executable, None)
        python, why = self.venv()
        if python is None:
            pytest.skip(why)
        if name == "root-readable":
            return self._setup(name, python, None)
        if confine._unreadable_for_others([str(ROOT)]):
            pytest.skip(f"another user could not read this checkout ({ROOT})")
        uid, why = unprivileged_user()
        if uid is None:
            pytest.skip(why)
        return self._setup(name, python, uid)

    def _setup(self, name: str, python: str, uid: int | None) -> Setup:
        work = self.root / name
        work.mkdir()
        (work / "tmp").mkdir()
        setup = Setup(name, python, uid, work)
        setup.own(work)
        self.made.append(setup)
        return setup

    def close(self) -> None:
        for setup in self.made:
            setup.close()
        shutil.rmtree(self.root, ignore_errors=True)
