"""Every rule of grader.sandbox.confine, tried with real system calls in a confined subprocess.

Each test starts a fresh Python, confines it with a Policy, then attempts things a hostile
submission would: each denied action must fail inside that process (with the errno the student's
code would see) and each allowed one must work. The switches that pretend a layer is unavailable
must give a record that says so, and must really leave that layer out.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader import processes
from attacks import PROCESS_CALLS
from liveprocesses import new_marker, running_with
from grader import cgroups
from grader.sandbox import confine as confine_mod

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

# Runs in the confined process: confine, then the test's lines, which fill `result`; printed as JSON.
_PRELUDE = """
import errno, json, os, socket, sys
sys.path.insert(0, {root!r})
from grader.sandbox import confine
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
record = confine.confine(confine.Policy(**{policy}))
result = {{"record": record}}
"""


def _everyone_can_read(python: str) -> bool:
    """Whether a uid with no groups can use ``python`` (a uid drop needs that)."""
    probe = "import sys; sys.path.insert(0, %r); from grader.sandbox import confine; " \
            "print(confine._unreadable_for_others(confine.python_paths()))" % str(ROOT)
    out = subprocess.run([python, "-I", "-c", probe], capture_output=True, text=True)
    return out.returncode == 0 and out.stdout.strip() == ""


NOBODY = 65534


def run_confined(code: str, python: str = sys.executable, user: int | None = None, timeout: float = 60,
                 **policy) -> dict:
    """Confine a fresh ``python`` with ``Policy(**policy)``, run ``code``, return its ``result`` dict."""
    policy_src = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in policy.items()) + "}"
    script = _PRELUDE.format(root=str(ROOT), policy=policy_src) + textwrap.dedent(code) + \
        "\nprint('RESULT' + json.dumps(result), flush=True)\n"
    preexec = None
    if user is not None:
        def preexec():
            os.setgroups([])
            os.setresgid(user, user, user)
            os.setresuid(user, user, user)
    proc = subprocess.run([python, "-I", "-c", script], capture_output=True, text=True, timeout=timeout,
                          cwd=policy.get("scratch", "/"), preexec_fn=preexec, stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, f"the confined process failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len("RESULT"):])


@pytest.fixture(autouse=True)
def no_groups_left():
    """These tests start confined processes themselves, not through the grader that removes a worker's control
    groups when it collects the worker (grader.processes.reap): remove what each left, as the grader would."""
    yield
    for pid in cgroups.left_behind():
        cgroups.collect(pid)


@pytest.fixture
def place():
    """A scratch (the worker's), a classmate's scratch, and a private file, in a world-traversable folder."""
    base = Path(tempfile.mkdtemp(prefix="confine-test-"))
    base.chmod(0o755)
    scratch, classmate = base / "scratch", base / "classmate"
    for folder in (scratch, classmate):
        folder.mkdir()
        folder.chmod(0o777)
    (classmate / "dot.py").write_text("ANSWER = 42\n")
    (classmate / "dot.py").chmod(0o644)
    secret = base / "secret.txt"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    yield {"base": base, "scratch": str(scratch), "classmate": str(classmate), "secret": str(secret)}
    subprocess.run(["rm", "-rf", str(base)], check=False)


# ---------------------------------------------------------------- files


def test_files_reach_only_the_scratch_and_what_python_needs(place):
    site = confine_mod.python_paths()[-1]
    result = run_confined(f"""
        result["course"] = attempt(lambda: open({str(ROOT / 'course.yaml')!r}).read())
        result["solution"] = attempt(lambda: open({str(ROOT / 'solutions/exercise7/dot.py')!r}).read())
        result["list_course"] = attempt(lambda: os.listdir({str(ROOT)!r}))
        result["classmate"] = attempt(lambda: open({place['classmate'] + '/dot.py'!r}).read())
        result["overwrite_classmate"] = attempt(lambda: open({place['classmate'] + '/dot.py'!r}, "w"))
        result["tmp"] = attempt(lambda: open("/tmp/confine-test-planted", "w"))
        result["engine"] = attempt(lambda: open({str(ROOT / 'grader/scoring.py')!r}, "a"))
        result["engine_read"] = attempt(lambda: open({str(ROOT / 'grader/protocol.py')!r}).read())
        result["pth"] = attempt(lambda: open({site + '/evil.pth'!r}, "w"))
        result["site_read"] = attempt(lambda: os.listdir({site!r}))
        result["stdlib"] = attempt(lambda: open(os.__file__).read())
        result["init_environ"] = attempt(lambda: open("/proc/1/environ").read())  # another process of its own
        result["init_cmdline"] = attempt(lambda: open("/proc/1/cmdline").read())  # namespace: Landlock's to deny
        result["init_cwd"] = attempt(lambda: os.listdir("/proc/1/cwd"))
        result["scratch_write"] = attempt(lambda: open("mine.txt", "w").write("x"))
        result["scratch_mkdir"] = attempt(lambda: os.makedirs("sub/dir"))
        result["scratch_remove"] = attempt(lambda: os.remove("mine.txt"))
        result["devnull"] = attempt(lambda: open("/dev/null", "w").write("x"))
        result["urandom"] = attempt(lambda: open("/dev/urandom", "rb").read(8))
        result["cpuinfo"] = attempt(lambda: open("/proc/cpuinfo").read())  # XNNPACK's, else it prints an error
        import numpy  # site-packages can be imported after confinement
        result["numpy"] = "ok"
    """, scratch=place["scratch"])
    assert "files" in result["record"]["held"]
    denied = ("course", "solution", "list_course", "classmate", "overwrite_classmate", "tmp", "engine", "pth",
              "init_environ", "init_cmdline", "init_cwd")
    assert {k: result[k] for k in denied} == dict.fromkeys(denied, "EACCES")
    allowed = ("engine_read", "site_read", "stdlib", "scratch_write", "scratch_mkdir", "scratch_remove", "devnull",
               "urandom", "cpuinfo", "numpy")
    assert {k: result[k] for k in allowed} == dict.fromkeys(allowed, "ok")
    assert not os.path.exists("/tmp/confine-test-planted")
    assert not os.path.exists(site + "/evil.pth")


def test_a_package_found_through_pythonpath_stays_readable_and_the_checkout_named_there_does_not(place, monkeypatch):
    """Where JAX is found only through PYTHONPATH (a TPU VM's image), a worker gets those folders back
    (grader.processes.boot) and may read them once confined; a checkout in PYTHONPATH is never one of them."""
    folder = place["base"] / "pythonpath"
    (folder / "only_here").mkdir(parents=True)
    (folder / "only_here" / "__init__.py").write_text("VALUE = 42\n")
    monkeypatch.setenv("PYTHONPATH", f"{folder}{os.pathsep}{ROOT}")
    result = run_confined(f"""
        from grader import processes
        sys.path[1:1] = processes.python_path()
        result["path"] = processes.python_path()
        import only_here
        result["value"] = only_here.VALUE
        result["solution"] = attempt(lambda: open({str(ROOT / 'solutions/exercise7/dot.py')!r}).read())
    """, scratch=place["scratch"])
    assert "files" in result["record"]["held"]
    assert result["path"] == [str(folder)] and result["value"] == 42 and result["solution"] == "EACCES"


def test_a_kept_folder_is_writable_and_the_folders_beside_it_are_not(place):
    cache = place["base"] / "compile-cache"
    for layout in ("devices-1", "devices-2"):
        (cache / layout).mkdir(parents=True)
    result = run_confined(f"""
        result["kept"] = attempt(lambda: open({str(cache / 'devices-1' / 'entry')!r}, "w").write("x"))
        result["beside"] = attempt(lambda: open({str(cache / 'devices-2' / 'entry')!r}, "w"))
        result["parent"] = attempt(lambda: open({str(cache / 'entry')!r}, "w"))
        result["scratch"] = attempt(lambda: open("mine.txt", "w").write("x"))
    """, scratch=place["scratch"], kept=(str(cache / "devices-1"),))
    assert "files" in result["record"]["held"]
    assert (result["kept"], result["scratch"]) == ("ok", "ok")
    assert (result["beside"], result["parent"]) == ("EACCES", "EACCES")


def test_switching_landlock_off_says_so_and_leaves_files_open(place):
    result = run_confined(f"""
        result["course"] = attempt(lambda: open({str(ROOT / 'course.yaml')!r}).read())
    """, scratch=place["scratch"], off=frozenset({"landlock"}))
    assert result["course"] == "ok"
    assert result["record"]["missing"]["files"] == "switched off for this run"
    assert "files" not in result["record"]["held"]


# ---------------------------------------------------------------- network


@pytest.fixture
def listeners():
    """A TCP listener on localhost and an abstract unix socket listener, both outside the sandbox."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0pmap-confine-test-{os.getpid()}"
    abstract.bind(name)
    abstract.listen(8)
    yield {"tcp_port": tcp.getsockname()[1], "abstract": name}
    tcp.close()
    abstract.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


NETWORK_ATTEMPTS = """
def connect(family, kind, address):
    with socket.socket(family, kind) as s:
        s.settimeout(2)
        s.connect(address)
def bind(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
result["tcp_connect"] = attempt(lambda: connect(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {tcp_port})))
result["tcp_bind"] = attempt(lambda: bind({bind_port}))
result["udp"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
result["udp6"] = attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))
result["raw"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
result["netlink"] = attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))
result["abstract"] = attempt(lambda: connect(socket.AF_UNIX, socket.SOCK_STREAM, {abstract!r}))
result["socketpair"] = attempt(lambda: socket.socketpair())
"""


def test_a_single_worker_has_no_network(place, listeners):
    result = run_confined(NETWORK_ATTEMPTS.format(bind_port=_free_port(), **listeners), scratch=place["scratch"])
    assert "network" in result["record"]["held"]
    for name in ("tcp_connect", "tcp_bind", "udp", "udp6", "raw", "netlink", "abstract"):
        assert result[name] == "EPERM", name
    assert result["socketpair"] == "ok"


def test_landlock_alone_stops_tcp_and_abstract_sockets(place, listeners):
    """With seccomp switched off, Landlock's TCP rules and abstract-socket scope still hold (UDP does not)."""
    result = run_confined(NETWORK_ATTEMPTS.format(bind_port=_free_port(), **listeners), scratch=place["scratch"],
                          off=frozenset({"seccomp"}))
    assert result["tcp_connect"] == "EACCES" and result["tcp_bind"] == "EACCES"
    assert result["abstract"] == "EPERM"
    assert result["udp"] == "ok"  # what seccomp is there for; the record must not claim the network
    assert result["record"]["missing"]["network"].startswith("other sockets are open")


def test_a_group_reaches_its_own_ports_only(place, listeners):
    own = _free_port()
    code = NETWORK_ATTEMPTS.format(bind_port=_free_port(), **listeners) + f"""
with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
    result["own_bind"] = attempt(lambda: server.bind(("127.0.0.1", {own})))
    server.listen(1)
    result["own_connect"] = attempt(lambda: connect(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {own})))
"""
    result = run_confined(code, scratch=place["scratch"], tcp_ports=(own,))
    assert result["own_bind"] == "ok" and result["own_connect"] == "ok"
    assert result["tcp_connect"] == "EACCES" and result["tcp_bind"] == "EACCES"
    assert result["udp"] == "EPERM" and result["abstract"] == "EPERM"
    assert result["record"]["tcp_ports"] == [own] and "network" in result["record"]["held"]


def test_a_gloo_group_without_a_network_of_its_own_may_connect_anywhere_and_the_record_says_so(place, listeners):
    own = _free_port()
    result = run_confined(NETWORK_ATTEMPTS.format(bind_port=_free_port(), **listeners), scratch=place["scratch"],
                          tcp_ports=(own, 0), tcp_connect_any=True)
    assert result["tcp_connect"] == "ok" and result["tcp_bind"] == "EACCES"
    assert result["udp"] == "EPERM" and result["abstract"] == "EPERM"
    assert result["record"]["missing"]["network"] == ("TCP connections are open: a multi-process group's gloo "
                                                      "connects to its peers' ephemeral ports, and this group has no "
                                                      "network of its own")


def test_a_group_in_a_network_of_its_own_reaches_nothing_outside_it(place, listeners):
    """Its own loopback: the grader's listener is not there to connect to, its own port is, and the record holds
    the network layer although gloo may connect to any port."""
    from grader.workers.launch import GroupNetwork

    network = GroupNetwork(str(ROOT), wanted=True)
    own = _free_port()
    code = NETWORK_ATTEMPTS.format(bind_port=_free_port(), **listeners) + f"""
with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
    server.bind(("127.0.0.1", {own}))
    server.listen(1)
    result["own_connect"] = attempt(lambda: connect(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {own})))
result["hostname"] = socket.gethostname()
"""
    try:
        assert network.pid, "no network namespace could be made here"
        result = run_confined(code, scratch=place["scratch"], tcp_ports=(own, 0), tcp_connect_any=True,
                              network_of=network.pid)
    finally:
        network.close()
    assert result["tcp_connect"] == "ECONNREFUSED" and result["own_connect"] == "ok"
    assert result["hostname"] == "localhost" and result["udp"] == "EPERM"
    assert "network" in result["record"]["held"]


def test_an_old_landlock_without_tcp_rules_is_reported(place):
    result = run_confined("", scratch=place["scratch"], tcp_ports=(_free_port(),), max_landlock_abi=3)
    record = result["record"]
    assert record["landlock_abi"] == 3 and "files" in record["held"]
    assert record["missing"]["network"] == "TCP connections are open: Landlock ABI 3 has no TCP rules (ABI 4 does)"
    assert "processes" in record["held"]  # its own pid namespace does what the signal scope would
    without = run_confined("", scratch=place["scratch"], max_landlock_abi=3, off=frozenset({"namespaces"}))["record"]
    assert without["missing"]["processes"].startswith(
        "other processes are open to signals (Landlock ABI 3 has no scopes (ABI 6 does)); no pid namespace")


# ---------------------------------------------------------------- other processes


@pytest.fixture
def bystander():
    """A process outside the sandbox (a sibling grading, the grader), with the worker's uid when it keeps root's."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


# Every way a process can be named, tried on the bystander, the parent and init; the errno each gets.
REACH_ATTEMPTS = PROCESS_CALLS + """
import resource, signal
def same_nice(pid):
    os.setpriority(os.PRIO_PROCESS, pid, 0)  # 0 is what the bystander has: nothing changes if it escapes
def tries(pid):
    return {{
        "kill": attempt(lambda: os.kill(pid, 0)),
        "prlimit": attempt(lambda: resource.prlimit(pid, resource.RLIMIT_CPU)),
        "setpriority": attempt(lambda: same_nice(pid)),
        "affinity": attempt(lambda: os.sched_setaffinity(pid, os.sched_getaffinity(0))),
        "scheduler": attempt(lambda: os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))),
        "ioprio": attempt(lambda: sys_call(251, 1, pid, 0)),  # ioprio_set(IOPRIO_WHO_PROCESS, pid, none)
        "pidfd_open": attempt(lambda: sys_call(434, pid, 0)),
        "pidfd_signal": attempt(lambda: sys_call(424, 3, 0, 0, 0)),  # fd 3 stands for a pidfd it could not open
        "ptrace": attempt(lambda: ptrace_attach(pid)),
        "vm_read": attempt(lambda: read_memory(pid)),
        "proc": attempt(lambda: open(f"/proc/{{pid}}/cmdline").read()),
    }}
result["bystander"] = tries({pid})
result["init"] = tries(1)
result["list_proc"] = attempt(lambda: os.listdir("/proc"))
result["prio_user"] = attempt(lambda: os.setpriority(os.PRIO_USER, 0, 0))
child = os.fork()
if child == 0:
    import time
    time.sleep(30)
    os._exit(0)
result["own_child"] = {{"kill": attempt(lambda: os.kill(child, signal.SIGKILL)),
                        "nice_self": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, 5)),
                        "rlimit_self": attempt(lambda: resource.setrlimit(resource.RLIMIT_CPU, (100, 100))),
                        "affinity_self": attempt(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))}}
os.waitpid(child, 0)
"""
REACH = ("kill", "prlimit", "setpriority", "affinity", "scheduler", "ioprio", "pidfd_open", "ptrace", "vm_read")


def _not_x86_64():
    return os.uname().machine != "x86_64"


@pytest.mark.skipif(_not_x86_64(), reason="the raw system call numbers are x86_64's")
def test_in_its_own_pid_namespace_no_other_process_can_be_named(place, bystander):
    """The namespace alone (seccomp, Landlock and the uid off): every other process is unnameable."""
    result = run_confined(REACH_ATTEMPTS.format(pid=bystander) + "result['listing'] = os.listdir('/proc')",
                          scratch=place["scratch"], off=frozenset({"seccomp", "landlock", "uid"}))
    assert "processes" in result["record"]["held"]
    assert {k: result["bystander"][k] for k in REACH} == dict.fromkeys(REACH, "ESRCH")
    assert result["bystander"]["proc"] == "ENOENT"  # its /proc is its namespace's: the bystander is not there
    assert sorted(int(p) for p in result["listing"] if p.isdigit()) == [1, 2]  # its init and itself
    assert result["own_child"] == {"kill": "ok", "nice_self": "ok", "rlimit_self": "ok", "affinity_self": "ok"}
    assert os.waitid(os.P_PID, bystander, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None  # still running


@pytest.mark.skipif(_not_x86_64(), reason="the raw system call numbers are x86_64's")
def test_without_a_pid_namespace_each_way_to_another_process_is_closed_on_its_own(place, bystander):
    """The second layer, alone: the worker keeps the bystander's uid (root's, or the user's), has no pid
    namespace, and still reaches nothing: Landlock's scope stops signals, seccomp the rest, Landlock /proc."""
    result = run_confined(REACH_ATTEMPTS.format(pid=bystander), scratch=place["scratch"],
                          off=frozenset({"namespaces", "uid"}))
    assert "processes" in result["record"]["held"]
    expected = dict.fromkeys(REACH, "EPERM")
    assert {k: result["bystander"][k] for k in REACH} == expected
    assert {k: result["init"][k] for k in REACH} == expected
    assert result["bystander"]["proc"] == "EACCES" and result["list_proc"] == "EACCES"
    assert result["prio_user"] == "EPERM"
    assert result["own_child"] == {"kill": "ok", "nice_self": "ok", "rlimit_self": "ok", "affinity_self": "ok"}
    assert os.waitid(os.P_PID, bystander, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None


def test_landlock_signal_scope_holds_without_seccomp(place, bystander):
    result = run_confined(REACH_ATTEMPTS.format(pid=bystander), scratch=place["scratch"],
                          off=frozenset({"seccomp", "namespaces", "uid"}))
    assert result["bystander"]["kill"] == "EPERM" and result["own_child"]["kill"] == "ok"
    assert result["record"]["missing"]["processes"].startswith(
        "other processes are open to ptrace, prlimit, setpriority and sched_setaffinity (switched off for this run)")


def test_escape_hatches_fail_with_an_error_not_a_kill(place):
    result = run_confined("""
        import ctypes, threading
        libc = ctypes.CDLL(None, use_errno=True)
        def call(number, *args):
            if libc.syscall(number, *args) < 0:
                raise OSError(ctypes.get_errno(), "syscall")
        result["unshare_user"] = attempt(lambda: call(272, 0x10000000))  # CLONE_NEWUSER
        result["io_uring"] = attempt(lambda: call(425, 8, ctypes.create_string_buffer(120)))
        result["clone3"] = attempt(lambda: call(435, None, 0))
        result["bpf"] = attempt(lambda: call(321, 0, None, 0))
        t = threading.Thread(target=lambda: None)
        t.start(); t.join()
        result["thread"] = "ok"
        child = os.fork()
        if child == 0:
            os._exit(7)
        result["fork_exit"] = os.waitpid(child, 0)[1] >> 8
    """, scratch=place["scratch"])
    if _not_x86_64():
        pytest.skip("the raw system call numbers above are x86_64's")
    assert result["unshare_user"] == "EPERM" and result["io_uring"] == "EPERM" and result["bpf"] == "EPERM"
    assert result["clone3"] == "ENOSYS"
    assert result["thread"] == "ok" and result["fork_exit"] == 7


def test_a_worker_that_kills_itself_dies_of_that_signal(place):
    """At pid 2 of its namespace (not its init) the worker dies like any process, and the holder the grader
    waits for ends the same way."""
    script = _PRELUDE.format(root=str(ROOT), policy=repr({"scratch": place["scratch"]})) + \
        "import signal\nos.kill(os.getpid(), signal.SIGKILL)\nprint('survived')\n"
    proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, cwd=place["scratch"])
    assert proc.returncode == -signal.SIGKILL and "survived" not in proc.stdout
    aborted = subprocess.run([sys.executable, "-I", "-c", script.replace("os.kill(os.getpid(), signal.SIGKILL)",
                                                                          "os.abort()")], cwd=place["scratch"])
    assert aborted.returncode == -signal.SIGABRT


# ---------------------------------------------------------------- device nodes and special files


def test_no_device_nodes_fifos_or_sockets_in_the_scratch(place):
    kmsg = os.makedev(1, 11)
    result = run_confined(f"""
        import stat
        result["char"] = attempt(lambda: os.mknod("kmsg", stat.S_IFCHR | 0o666, {kmsg}))
        result["block"] = attempt(lambda: os.mknod("disk", stat.S_IFBLK | 0o666, os.makedev(8, 0)))
        result["fifo"] = attempt(lambda: os.mkfifo("fifo"))
        result["kmsg"] = attempt(lambda: open("/dev/kmsg", "rb"))
        with open("/proc/self/status") as f:
            result["caps"] = [line.split()[1] for line in f if line.startswith(("CapEff", "CapPrm", "CapBnd"))]
    """, scratch=place["scratch"])
    assert (result["char"], result["block"], result["fifo"]) == ("EPERM", "EPERM", "EPERM")  # seccomp
    assert result["kmsg"] == "EACCES"
    assert result["caps"] == ["0000000000000000"] * 3
    landlock_only = run_confined("""
        import stat
        result["char"] = attempt(lambda: os.mknod("kmsg", stat.S_IFCHR | 0o666, os.makedev(1, 11)))
        result["fifo"] = attempt(lambda: os.mkfifo("fifo"))
    """, scratch=place["scratch"], off=frozenset({"seccomp", "uid"}))
    assert (landlock_only["char"], landlock_only["fifo"]) == ("EACCES", "EACCES")  # the scratch has no right to


def test_a_root_worker_that_keeps_uid_0_has_no_capabilities(place):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    result = run_confined(f"""
        import stat
        result["uid"] = os.getuid()
        result["char"] = attempt(lambda: os.mknod("kmsg", stat.S_IFCHR | 0o666, os.makedev(1, 11)))
        result["secret"] = attempt(lambda: open({place['secret']!r}).read())
        result["chown"] = attempt(lambda: os.chown(".", 1, 1))
    """, scratch=place["scratch"], off=frozenset({"seccomp", "uid", "landlock"}))
    assert result["uid"] == 0 and result["char"] == "EPERM"  # no CAP_MKNOD, and no Landlock in the way
    assert result["secret"] == "ok"  # a file its uid owns (no layer claims this case: uid and files are off)
    assert result["chown"] == "EPERM"  # no CAP_CHOWN


# ---------------------------------------------------------------- uid


def test_as_root_a_worker_gets_its_own_uid(place):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    place["base"].chmod(0o711)  # as the grader leaves a scratch's parent: searchable, not listable
    kept = place["base"] / "kept"
    (kept / "entries").mkdir(parents=True)  # root's, as an earlier worker's uid may have left it
    result = run_confined(f"""
        result["ids"] = [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()]
        result["secret"] = attempt(lambda: open({place['secret']!r}).read())
        result["scratch_owner"] = os.stat(".").st_uid
        result["write"] = attempt(lambda: open("mine.txt", "w").write("x"))
        result["kept_write"] = attempt(lambda: open({str(kept / 'entries' / 'new')!r}, "w").write("x"))
        result["setuid_back"] = attempt(lambda: os.setuid(0))
    """, scratch=place["scratch"], kept=(str(kept),), off=frozenset({"landlock"}))  # the uid alone keeps them out
    uid = result["record"]["uid"]
    assert uid > confine_mod.UID_BASE and "uid" in result["record"]["held"]
    assert result["ids"] == [uid, uid, uid, uid, []]
    assert result["secret"] == "EACCES" and result["setuid_back"] == "EPERM"
    assert result["scratch_owner"] == uid and result["write"] == "ok"
    assert result["kept_write"] == "ok" and os.stat(kept / "entries").st_uid == uid


PRIVATE_PYTHON = sys.executable if os.geteuid() == 0 and confine_mod._unreadable_for_others(
    confine_mod.python_paths()) else None


@pytest.mark.skipif(PRIVATE_PYTHON is None, reason="needs root and a Python in a folder other users cannot pass")
def test_a_python_in_a_private_folder_keeps_the_uid_layer(place):
    """Like pyenv under /root (mode 0700): in the worker's mount namespace the folder is covered by one that
    holds only the Python, so the worker takes a uid of its own and still imports; the rest stays hidden."""
    private = Path(next(p for p in confine_mod.python_paths() if confine_mod._unreadable_for_others([p])))
    closed = next(p for p in [*reversed(private.parents)] if not p.stat().st_mode & 0o001)
    beside = sorted(n for n in os.listdir(closed) if not private.is_relative_to(closed / n))
    result = run_confined(f"""
        import decimal, sqlite3, json  # modules this Python has not imported yet
        import numpy
        result["uid"] = os.getuid()
        result["listing"] = sorted(os.listdir({str(closed)!r}))
    """, python=PRIVATE_PYTHON, scratch=place["scratch"], off=frozenset({"landlock"}))
    assert result["uid"] == result["record"]["uid"] > confine_mod.UID_BASE
    assert not set(beside) & set(result["listing"])  # what else the folder holds is out of sight


def test_without_namespaces_a_private_python_is_named_instead_of_breaking_the_worker(place):
    if PRIVATE_PYTHON is None:
        pytest.skip("needs root and a Python in a folder other users cannot pass")
    result = run_confined("result['uid'] = os.getuid()", scratch=place["scratch"], off=frozenset({"namespaces"}))
    assert result["record"]["missing"]["uid"].startswith("another uid could not read ")
    assert "mount namespaces" in result["record"]["missing"]["uid"] and result["uid"] == 0


def test_a_path_only_root_can_read_is_named_instead_of_breaking_the_worker(place):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    hidden = place["base"] / "private"
    hidden.mkdir(mode=0o700)
    result = run_confined("result['uid'] = os.getuid()", scratch=place["scratch"], read_only=(str(hidden),))
    assert result["record"]["missing"]["uid"] == (f"another uid could not read {hidden} (mode 0700), which the "
                                                  "worker needs; make it readable by every user")
    assert result["uid"] == 0


def test_not_root_keeps_the_uid_and_says_why(place):
    python = "/usr/bin/python3" if os.geteuid() == 0 else sys.executable
    if os.geteuid() == 0 and not (os.path.exists(python) and _everyone_can_read(python)):
        pytest.skip("needs a Python that an unprivileged user can run")
    user = NOBODY if os.geteuid() == 0 else None
    result = run_confined(f"""
        result["course"] = attempt(lambda: open({str(ROOT / 'course.yaml')!r}).read())
        result["write"] = attempt(lambda: open("mine.txt", "w").write("x"))
        result["pid"] = os.getpid()
    """, python=python, user=user, scratch=place["scratch"])
    record = result["record"]
    own_groups = not cgroups.survey()["memory"] if user is None else False
    assert {k: v for k, v in record["missing"].items() if k not in ("memory", "cpu")} == {
        "uid": "the grader is not root, so workers keep its uid"}
    assert own_groups or record["missing"]["memory"].startswith("bounded per process (RLIMIT_DATA), not per worker")
    assert record["uid"] is None
    assert result["course"] == "EACCES" and result["write"] == "ok"
    assert result["pid"] == 2  # its own user namespace gave it a pid namespace too (pid 1 is its init)


# ---------------------------------------------------------------- IPC, file events, memory

_IPC = """
import ctypes, mmap
libc = ctypes.CDLL(None, use_errno=True)
def check(value):
    if value < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return value
def make_ipc(key):
    segment = check(libc.shmget(key, 1 << 20, 0o1666))  # IPC_CREAT, readable by anyone
    check(libc.msgget(key, 0o1666))
    check(libc.semget(key, 1, 0o1666))
    return segment
def find_ipc(key):
    check(libc.shmget(key, 0, 0))
"""
_IPC_KEY = 0x5EC0DE


def _sysv_keys(kind: str) -> set[int]:
    with open(f"/proc/sysvipc/{kind}") as f:
        return {int(line.split()[0]) for line in f.readlines()[1:]}


def test_ipc_objects_stay_in_the_worker_and_die_with_it(place):
    """Segments, queues and semaphores a worker makes are in an IPC namespace of its own: the next worker finds
    none of them, and none is left on the machine."""
    first = run_confined(_IPC + textwrap.dedent(f"""
        result["make"] = attempt(lambda: make_ipc({_IPC_KEY}))
        result["found"] = attempt(lambda: find_ipc({_IPC_KEY}))
        result["mq"] = attempt(lambda: os.close(check(libc.mq_open(b"/grade-test", os.O_CREAT | os.O_RDWR, 0o666, None))))
    """), scratch=place["scratch"])
    assert (first["make"], first["found"], first["mq"]) == ("ok", "ok", "EACCES"), first  # mq: Landlock
    assert "ipc" in first["record"]["held"]
    second = run_confined(_IPC + textwrap.dedent(f"""
        result["find"] = attempt(lambda: find_ipc({_IPC_KEY}))
    """), scratch=place["scratch"])
    assert second["find"] == "ENOENT"
    assert all(_IPC_KEY not in _sysv_keys(kind) for kind in ("shm", "msg", "sem"))


def test_a_group_shares_its_ipc_namespace_and_nobody_else_does(place):
    """Two processes of one group (joined to its network holder) see each other's System V objects; a worker of
    no group does not, and nothing is left once the group's holder is gone."""
    from grader.workers.launch import GroupNetwork

    network = GroupNetwork(str(ROOT), wanted=True)
    try:
        assert network.pid, "no group namespaces could be made here"
        member = {"scratch": place["scratch"], "tcp_ports": (0,), "tcp_connect_any": True, "network_of": network.pid}
        first = run_confined(_IPC + f"result['make'] = attempt(lambda: make_ipc({_IPC_KEY}))\n", **member)
        second = run_confined(_IPC + f"result['find'] = attempt(lambda: find_ipc({_IPC_KEY}))\n", **member)
        alone = run_confined(_IPC + f"result['find'] = attempt(lambda: find_ipc({_IPC_KEY}))\n",
                             scratch=place["scratch"])
    finally:
        network.close()
    assert (first["make"], second["find"], alone["find"]) == ("ok", "ok", "ENOENT")
    assert all(_IPC_KEY not in _sysv_keys(kind) for kind in ("shm", "msg", "sem"))


def test_without_namespaces_system_v_ipc_and_message_queues_are_refused(place):
    result = run_confined(_IPC + textwrap.dedent(f"""
        result["make"] = attempt(lambda: make_ipc({_IPC_KEY}))
        result["find"] = attempt(lambda: check(libc.msgget({_IPC_KEY}, 0)))
        result["mq"] = attempt(lambda: check(libc.mq_open(b"/grade-test", os.O_CREAT | os.O_RDWR, 0o666, None)))
    """), scratch=place["scratch"], off=frozenset({"namespaces"}))
    assert result["make"] == result["find"] == result["mq"] == "EPERM"
    assert "ipc" in result["record"]["held"]
    both_off = run_confined("", scratch=place["scratch"], off=frozenset({"namespaces", "seccomp"}))
    assert both_off["record"]["missing"]["ipc"].startswith("System V IPC and POSIX message queues are shared")


def test_no_file_events_from_anywhere(place):
    """inotify and fanotify are refused: a watch on / or /tmp would report classmates' files and the gradebook."""
    result = run_confined("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        def call(fn, *args):
            if fn(*args) < 0:
                raise OSError(ctypes.get_errno(), "")
        result["inotify"] = attempt(lambda: call(libc.inotify_init1, 0))
        result["fanotify"] = attempt(lambda: call(libc.fanotify_init, 0, 0))
    """, scratch=place["scratch"])
    assert result["inotify"] == result["fanotify"] == "EPERM"


_MEMFD_HOG = """
import mmap, sys
held = []
def hold(mib):
    fd = os.memfd_create("hog")
    os.ftruncate(fd, mib << 20)
    view = mmap.mmap(fd, mib << 20)
    for at in range(0, mib << 20, 4096):
        view[at] = 1
    held.append((fd, view))
"""


@pytest.mark.skipif(bool(cgroups.survey()["memory"]), reason="this machine makes no memory cgroup for a worker")
def test_memory_is_bounded_for_the_worker_processes_together(place):
    """Two processes holding memfds of 96 MiB each, under a bound of 128 MiB for the worker: its memory cgroup's
    OOM killer ends one of them (nothing outside the worker), the grader's collect counts it, and the group is gone.
    The parent is killed either way: where the killer picks the child, the parent then holds 96 MiB more (only the
    parent may print: under load the killer once picked the parent first, and the child, alone, printed)."""
    script = _PRELUDE.format(root=str(ROOT), policy=repr({"scratch": place["scratch"], "memory_bytes": 128 << 20})) + \
        _MEMFD_HOG + textwrap.dedent("""
        import time
        print("RESULT" + json.dumps(result), flush=True)
        child = os.fork()
        hold(96)
        if not child:  # holds its 96 MiB while the parent holds its own, then leaves quietly, whichever is killed
            time.sleep(10)
            os._exit(0)
        os.waitpid(child, 0)
        hold(96)
        print("survived", flush=True)
        """)
    proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdout=subprocess.PIPE, text=True, cwd=place["scratch"])
    out, _ = proc.communicate(timeout=60)
    record = json.loads(out.split("RESULT", 1)[1].splitlines()[0])["record"]
    assert "memory" in record["held"] and record["memory_bound"].endswith("128 MB for the worker's processes together")
    assert "survived" not in out and proc.returncode == -signal.SIGKILL
    assert cgroups.collect(proc.pid)["oom_kills"] >= 1
    assert proc.pid not in cgroups.left_behind()


def test_without_a_memory_cgroup_each_process_is_bounded_and_memfd_refused(place):
    result = run_confined(_MEMFD_HOG + textwrap.dedent("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        result["memfd"] = attempt(lambda: hold(1))
        result["shm"] = "ok" if libc.shmget(0, 1 << 20, 0o1600) >= 0 else errno.errorcode[ctypes.get_errno()]
        try:
            bytearray(512 << 20)
            result["big"] = "ok"
        except MemoryError:
            result["big"] = "MemoryError"
    """), scratch=place["scratch"], memory_bytes=256 << 20, off=frozenset({"cgroups"}))
    assert result["memfd"] == result["shm"] == "EPERM" and result["big"] == "MemoryError"
    record = result["record"]
    assert record["memory_bound"] == "RLIMIT_DATA: 256 MB per process"
    assert record["missing"]["memory"] == ("bounded per process (RLIMIT_DATA), not per worker: no memory cgroup "
                                           "(switched off for this run)")
    assert record["missing"]["cpu"] == "no CPU share of its own: switched off for this run"


# ---------------------------------------------------------------- lifetime and limits


def test_without_namespaces_a_setsid_double_fork_survivor_stays_in_the_tree_and_is_killed(place):
    """The worker is a subreaper: the orphaned grandchild is adopted by it, so kill_group finds it."""
    policy = {"scratch": place["scratch"], "off": frozenset({"namespaces"})}
    script = _PRELUDE.format(root=str(ROOT), policy=repr(policy)) + textwrap.dedent("""
        import time
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            middle = os.getpid()
            if os.fork() == 0:
                while os.getppid() == middle:  # until the middle process has exited and it is adopted
                    time.sleep(0.01)
                os.write(w, f"{os.getpid()} {os.getppid()}".encode())
                time.sleep(60)
            os._exit(0)
        result["survivor"], result["adopted_by"] = map(int, os.read(r, 64).split())
        result["me"] = os.getpid()
        print("RESULT" + json.dumps(result), flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=place["scratch"])
    line = proc.stdout.readline()
    assert line.startswith("RESULT"), line
    result = json.loads(line[len("RESULT"):])
    assert result["adopted_by"] == result["me"] == proc.pid
    processes.kill_group(proc.pid)
    proc.wait(10)
    time.sleep(0.1)
    assert not os.path.exists(f"/proc/{result['survivor']}") or \
        open(f"/proc/{result['survivor']}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize("ending", ["exits", "is killed"])
def test_nothing_the_worker_started_outlives_it(place, ending):
    """A setsid double fork that execs a program is still in the worker's pid namespace, which ends with it."""
    marker = new_marker()
    script = _PRELUDE.format(root=str(ROOT), policy=repr({"scratch": place["scratch"]})) + textwrap.dedent(f"""
        import time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", {marker!r}])
            os._exit(0)
        print("RESULT" + json.dumps(result), flush=True)
        time.sleep(0.3 if {ending == "exits"!r} else 60)
    """)
    proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdout=subprocess.PIPE, text=True,
                            start_new_session=True, cwd=place["scratch"])
    assert proc.stdout.readline().startswith("RESULT")
    deadline = time.monotonic() + 10
    while not running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert running_with(marker), "the survivor never started"
    if ending == "is killed":
        processes.kill_group(proc.pid)
    proc.wait(10)
    processes.kill_adopted()  # where this process is a subreaper: what the holder left is collected here
    deadline = time.monotonic() + 5
    while running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert running_with(marker) == []


def test_a_holder_killed_before_its_worker_leaves_nothing_to_hang_on(place):
    """killpg kills the holder, its worker and its namespace's init at once (a multi-process group is stopped
    so): the worker's zombie and the init (which cannot end its namespace before that zombie is collected)
    come to the subreaper above, which collects both without blocking on either."""
    confined = _PRELUDE.format(root=str(ROOT), policy=repr({"scratch": place["scratch"]})) + \
        "import time\nprint('CONFINED', flush=True)\ntime.sleep(60)\n"
    script = textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path.insert(0, {str(ROOT)!r})
        from grader import processes
        processes.adopt_orphans()
        holder = subprocess.Popen([sys.executable, "-I", "-c", {confined!r}], stdout=subprocess.PIPE, text=True,
                                  start_new_session=True, cwd={place['scratch']!r})
        assert holder.stdout.readline() == "CONFINED\\n"
        os.killpg(holder.pid, 9)
        holder.wait()
        processes.kill_adopted()
        def children():  # zombies included
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{{pid}}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                            found.append(int(pid))
                except OSError:
                    pass
            return found
        print("LEFT", children())
    """)
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "LEFT []", out.stdout + out.stderr


FORK_UNTIL_REFUSED = """
import time
children = []
def bomb():
    while len(children) < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
result["bomb"] = attempt(bomb)
result["forked"] = len(children)
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
"""


def test_the_process_count_is_bounded_without_a_uid_of_its_own(place):
    """Its pid namespace's own pid_max bounds the tasks, whatever the uid (here root's, which RLIMIT_NPROC
    never bounds)."""
    if not confine_mod.namespaces.per_namespace_pid_max():
        pytest.skip("pid_max is per pid namespace from Linux 6.14")
    result = run_confined(FORK_UNTIL_REFUSED, scratch=place["scratch"], process_limit=400, off=frozenset({"uid"}))
    assert result["bomb"] == "EAGAIN" and 350 < result["forked"] < 400
    assert "limits" in result["record"]["held"]


def test_own_uid_bounds_a_fork_bomb(place):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    result = run_confined(FORK_UNTIL_REFUSED, scratch=place["scratch"], process_limit=20)
    assert result["bomb"] == "EAGAIN" and result["forked"] < 20


def test_a_normal_users_worker_counts_only_its_own_processes(place):
    """RLIMIT_NPROC in its own user namespace: the user's other processes (a classmate's workers) do not
    count, so a limit below their number still lets the worker fork, and stops it at the limit."""
    if os.geteuid() != 0 or not _everyone_can_read("/usr/bin/python3"):
        pytest.skip("needs root (to act as another user) and a Python every user can run")
    others = [subprocess.Popen(["sleep", "60"], preexec_fn=lambda: os.setresuid(NOBODY, NOBODY, NOBODY))
              for _ in range(30)]
    try:
        result = run_confined(FORK_UNTIL_REFUSED, python="/usr/bin/python3", user=NOBODY, scratch=place["scratch"],
                              process_limit=20)
    finally:
        for other in others:
            other.kill()
            other.wait()
    assert result["bomb"] == "EAGAIN" and 10 < result["forked"] < 20


def test_the_scratch_is_private_and_its_size_bounded(place):
    scratch = Path(place["scratch"])
    (scratch / "dot.py").write_text("ANSWER = 1\n")  # the grader's copy of the submission
    result = run_confined("""
        result["copy"] = open("dot.py").read()
        open("mine.txt", "w").write("x")
        def fill():
            for i in range(100):
                with open(f"fill{i}.bin", "wb") as f:
                    f.write(b"x" * (1 << 20))
        result["fill"] = attempt(fill)
    """, scratch=place["scratch"], scratch_bytes=4 << 20)
    assert result["copy"] == "ANSWER = 1\n" and result["fill"] == "ENOSPC"
    assert sorted(os.listdir(scratch)) == ["dot.py"]  # what the worker wrote stayed in its own scratch
    assert "limits" in result["record"]["held"]


def test_a_spare_fills_its_scratch_with_what_the_grader_copied_after_it_started(place):
    script = _PRELUDE.format(root=str(ROOT), policy=repr({"scratch": place["scratch"]})) + textwrap.dedent(f"""
        print("CONFINED", flush=True)
        sys.stdin.readline()  # the test copies the submission now
        confine.fill_scratch()
        result["late"] = open("late.py").read()
        fds = []
        for n in os.listdir("/proc/self/fd"):
            try:
                fds.append(os.readlink(f"/proc/self/fd/{{n}}"))
            except OSError:
                pass  # the descriptor listdir used
        result["below_open"] = {place['scratch']!r} in fds
        print("RESULT" + json.dumps(result), flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=place["scratch"])
    assert proc.stdout.readline() == "CONFINED\n"
    Path(place["scratch"], "late.py").write_text("LATE = 1\n")
    out, _ = proc.communicate("go\n", timeout=30)
    result = json.loads(out.split("RESULT", 1)[1])
    assert result["late"] == "LATE = 1\n" and not result["below_open"]  # the grader's copy is let go


def test_file_size_and_core_limits(place):
    result = run_confined("""
        import resource
        def big():
            with open("big.bin", "wb") as f:
                f.write(b"x" * (2 << 20))
        result["big"] = attempt(big)
        result["size"] = os.path.getsize("big.bin")
        result["core"] = resource.getrlimit(resource.RLIMIT_CORE)
        result["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)
    """, scratch=place["scratch"], limits={1: 1 << 20, 4: 0, 7: 64})  # RLIMIT_FSIZE, RLIMIT_CORE, RLIMIT_NOFILE
    assert result["big"] == "EFBIG" and result["size"] <= 1 << 20
    assert result["core"] == [0, 0] and result["nofile"] == [64, 64]
    assert "limits" in result["record"]["held"]


# ---------------------------------------------------------------- the record, the switch, the cost


def test_everything_switched_off_holds_nothing_and_says_why(place):
    result = run_confined(f"""
        result["course"] = attempt(lambda: open({str(ROOT / 'course.yaml')!r}).read())
        result["udp"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    """, scratch=place["scratch"], off=frozenset(confine_mod.MECHANISMS))
    record = result["record"]
    assert record["held"] == []
    assert set(record["missing"]) == set(confine_mod.LAYERS)
    assert result["course"] == "ok" and result["udp"] == "ok"
    assert record["missing"]["files"] == "switched off for this run"


def test_an_unknown_mechanism_is_refused():
    with pytest.raises(ValueError, match="unknown sandbox mechanisms"):
        confine_mod.confine(confine_mod.Policy(scratch="/nonexistent", off=frozenset({"landlok"})))


def test_jax_pmap_psum_runs_confined_in_a_fork_of_a_jax_importing_parent(place):
    """What a zygote does: import JAX, fork, confine the child, then pmap + psum on 4 emulated devices."""
    python = sys.executable
    script = textwrap.dedent(f"""
        import json, os, sys
        sys.path.insert(0, {str(ROOT)!r})
        import jax, jax.numpy as jnp
        from grader.sandbox import confine
        confine.python_paths()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            record = confine.confine(confine.Policy(scratch={place['scratch']!r}))
            jax.config.update("jax_num_cpu_devices", 4)
            from jax import lax
            out = jax.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.arange(4.0))
            hlo = jax.jit(lambda x: x @ x).lower(jnp.ones((3, 3))).compile().as_text()
            os.write(w, json.dumps({{"record": record, "out": out.tolist(), "hlo": "HloModule" in hlo}}).encode())
            os._exit(0)
        os.close(w)
        data = os.read(r, 1 << 16)
        print("RESULT" + data.decode(), "EXIT", os.waitpid(pid, 0)[1])
    """)
    env = {"PATH": os.defpath, "JAX_PLATFORMS": "cpu", "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([python, "-I", "-c", script], capture_output=True, text=True, timeout=120, env=env,
                          cwd=place["scratch"])
    assert "RESULT" in proc.stdout, proc.stderr[-3000:]
    data = json.loads(proc.stdout.split("RESULT", 1)[1].rsplit(" EXIT", 1)[0])
    assert data["out"] == [6.0, 6.0, 6.0, 6.0] and data["hlo"]
    assert {"files", "network", "processes", "syscalls", "lifetime", "limits"} <= set(data["record"]["held"])
    assert data["record"]["cost_ms"] > 0  # measured (bench/bench.py reports what it costs a run)


def test_the_record_carries_what_confining_cost(place):
    result = run_confined("", scratch=place["scratch"])
    assert result["record"]["cost_ms"] > 0


def test_survey_predicts_the_record_without_confining(place):
    """survey() runs in the grader: it must say what confine() will do, and leave the caller unconfined."""
    result = run_confined("", scratch=place["scratch"])
    predicted = confine_mod.survey(confine_mod.Policy(scratch=place["scratch"]))
    assert predicted["held"] == result["record"]["held"] and predicted["missing"] == result["record"]["missing"]
    assert open(ROOT / "course.yaml").read()  # this process is still free
    off = confine_mod.survey(confine_mod.Policy(scratch=place["scratch"], off=frozenset({"seccomp"})))
    assert off["missing"]["syscalls"] == "switched off for this run"


def test_the_worker_reads_its_own_proc_entry_only(place):
    result = run_confined(f"""
        result["own_fds"] = attempt(lambda: os.listdir("/proc/self/fd"))
        result["own_status"] = attempt(lambda: open("/proc/self/status").read())
        result["init"] = attempt(lambda: open("/proc/1/cmdline").read())
        result["via_root_link"] = attempt(lambda: open("/proc/self/root" + {str(ROOT / 'course.yaml')!r}).read())
        result["via_cwd_link"] = attempt(lambda: os.listdir("/proc/self/cwd/.."))
    """, scratch=place["scratch"])
    assert result["own_fds"] == "ok" and result["own_status"] == "ok" and result["init"] == "EACCES"
    assert result["via_root_link"] == "EACCES" and result["via_cwd_link"] == "EACCES"  # links do not widen it


def test_device_nodes_open_for_writing_but_nothing_is_created_beside_them(place):
    """What an accelerator's /dev gets: its files may be written (like /dev/nvidia0), nothing new made there."""
    devices = place["base"] / "dev"
    devices.mkdir(mode=0o777)
    (devices / "accel0").write_text("")
    (devices / "accel0").chmod(0o666)
    result = run_confined(f"""
        result["write"] = attempt(lambda: open({str(devices / 'accel0')!r}, "w").write("x"))
        result["create"] = attempt(lambda: open({str(devices / 'new')!r}, "w"))
        result["remove"] = attempt(lambda: os.remove({str(devices / 'accel0')!r}))
    """, scratch=place["scratch"], devices=(str(devices),))
    assert result["write"] == "ok" and result["create"] == "EACCES" and result["remove"] == "EACCES"


def test_elsewhere_than_linux_every_layer_is_missing_and_nothing_breaks(place):
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from grader.sandbox import confine
        sys.platform = "darwin"
        print(json.dumps(confine.confine(confine.Policy(scratch={place['scratch']!r}))))
    """)
    record = json.loads(subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True,
                                       check=True).stdout)
    assert record["held"] == [] and set(record["missing"]) == set(confine_mod.LAYERS)
    assert record["missing"]["files"] == "darwin is not Linux"


def test_the_grader_kills_and_collects_the_orphans_it_adopts():
    """A worker's orphan, adopted by the subreaper above it, is killed and reaped (no zombie left behind)."""
    script = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from grader import processes
        processes.adopt_orphans()
        r, w = os.pipe()
        worker = os.fork()
        if worker == 0:  # a worker in a session of its own that leaves a grandchild and exits
            os.setsid()
            if os.fork() == 0:
                os.write(w, str(os.getpid()).encode())
                time.sleep(60)
            os._exit(0)
        os.waitpid(worker, 0)
        orphan = int(os.read(r, 32))
        time.sleep(0.2)
        adopted = processes.descendants(os.getpid()) == [orphan]
        processes.kill_adopted()
        print(adopted, os.path.exists(f"/proc/{{orphan}}"))
    """)
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "False"], out.stdout + out.stderr


def test_a_pth_file_naming_the_checkout_gives_workers_no_reading_of_it(tmp_path):
    """An editable install's .pth names the project's root, where the solutions and suites are: never readable."""
    site, other = tmp_path / "site", tmp_path / "plugin"
    site.mkdir()
    other.mkdir()
    (site / "editable.pth").write_text(f"{ROOT}\n{ROOT.parent}\n{other}\nimport sys\n")
    assert confine_mod._pth_folders([str(site)]) == {str(other)}
