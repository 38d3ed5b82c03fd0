"""Classmates and the grader out of reach, in every setup: a catalogue of attacks, one batch per class and setup.

Each class of attack is one student's submission (the toy course's ``add``), graded in a 3-student
``grade batch --jobs 2`` beside two classmates, in each setup of setups.py (root with a Python
every user can read, root with a private Python, an unprivileged user). Every batch asserts:

- the verdict: every attempt was refused or bounded (a step that works is named "ESCAPED");
- the classmates' results are exactly those of a batch without the attacker;
- the grader's report is complete (every student, every task, every case, the sandbox record);
- every export parses with its consumer's parser (csv, json, xml.etree, html.parser), and
  nothing written for a terminal holds an escape sequence;
- no process outlives grading.

The classes: ``reach`` names other processes every way there is (signals, ptrace, prlimit,
setpriority, sched_setscheduler / setaffinity, ioprio_set, process_vm_readv, pidfd_open, /proc),
makes device nodes and special files, reads classmates' files, and says all of it in hostile text
(escape sequences, characters XML forbids, HTML, a formula, from a student id, a failure message,
a file name and printed output); ``limits`` leaves a daemon, starts processes until refused, fills
its scratch with data and with files, exhausts memory (also in memfds and System V shared memory),
keeps every core busy, floods its output and answers for its worker with failure messages of 12 and
24 MiB; ``reach`` also watches for file events and leaves System V objects for a later worker to find.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import sqlite3
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from attacks import PROCESS_CALLS, TRY_STEPS
from classroom import Page, folder
from conftest import run_grade
from grader import cgroups
from setups import SETUPS, Factory
from toycourse import EXERCISE, SOLUTIONS, make_course

pytestmark = pytest.mark.skipif(not platform.machine() == "x86_64" or not os.uname().sysname == "Linux",
                                reason="the attacks use x86_64 Linux system call numbers")

SEED = "4242"
MEMORY_MB = 1024
IPC_KEY = 0x15C0DE  # the System V key the attackers make objects with (and IPC_KEY + 1)
REFUSED = "every attempt was refused"
ATTACKER = '=HYPERLINK("evil")\x1b[31m<b>mallory\u202e'  # a folder name: the student id
CLASSMATES = {"alice": SOLUTIONS, "bob": {**SOLUTIONS, "scale.py": "def scale(v, factor):\n    return v * factor + 1\n"}}
HOSTILE = ("\x1b[2J\x1b[H\x1b]0;pwned\x07\r  add  10 / 10  passed \u202e<script>alert(1)</script>"
           "=HYPERLINK(\"http://evil\")\x00\ufffe\x7f\x9b31m\nand a second line")
TERMINAL_FORBIDDEN = ("\x1b", "\x9b", "\x07", "\r", "\u202e", "\x00")


# ---------------------------------------------------------------- the attacks

REACH = PROCESS_CALLS + TRY_STEPS + """
import resource, signal, stat, sys
_outcome = []
HOSTILE = {hostile!r}
BYSTANDERS = {bystanders!r}
PID_MAX = {pid_max}
IPC_KEY = {ipc_key}
# Its own tree: itself, its threads (XLA's), and in a pid namespace of its own (its parent is outside it, pid 0
# here), pid 1, the namespace's init.
OWN = {{os.getpid()}} | {{int(t) for t in os.listdir("/proc/self/task")}} | ({{1}} if os.getppid() == 0 else set())


def sweep(probe):
    \"\"\"Probe every pid outside the worker's own tree; returns (escaping) at the first that answers.\"\"\"
    for pid in range(1, PID_MAX + 1):
        if pid not in OWN:
            try:
                probe(pid)
                return
            except OSError:
                pass
    raise PermissionError("no process reached")


def pidfd(pid):
    os.close(sys_call(434, pid, 0))  # pidfd_open


def watch(path):
    fd = sys_call(294, 0)  # inotify_init1
    if libc.inotify_add_watch(fd, path, 0xFFF) < 0:
        raise OSError(ctypes.get_errno(), "inotify_add_watch")


def others_in_proc():
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in OWN]
    if not others:
        raise PermissionError("only its own processes")


STEPS = [
    ("signal any process", lambda: sweep(lambda pid: os.kill(pid, 0))),
    ("prlimit any process", lambda: sweep(lambda pid: resource.prlimit(pid, resource.RLIMIT_CPU))),
    ("pidfd_open any process", lambda: sweep(pidfd)),
    ("list other processes", others_in_proc),
    ("read init's environment", lambda: open("/proc/1/environ", "rb").read()),
    ("make /dev/kmsg", lambda: os.mknod("kmsg", stat.S_IFCHR | 0o600, os.makedev(1, 11))),
    ("make a block device", lambda: os.mknod("disk", stat.S_IFBLK | 0o600, os.makedev(8, 0))),
    ("make a FIFO", lambda: os.mkfifo("fifo")),
    ("read the kernel log", lambda: os.read(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK), 100)),
    ("read a classmate", lambda: open({classmate!r}).read()),
    ("write the gradebook", lambda: open({book!r}, "r+b").write(b"x")),
    ("read the course", lambda: open({course!r}).read()),
    ("watch / for file events", lambda: watch(b"/")),
    ("watch the class's folder for file events", lambda: watch({klass!r}.encode())),
    ("watch the machine with fanotify", lambda: sys_call(300, 0, 0)),  # fanotify_init(FAN_CLASS_NOTIF, O_RDONLY)
]
# System V objects left for a later worker to find (made quietly: making them is no escape, finding them is).
libc.shmget(IPC_KEY, 1 << 20, 0o1666)
libc.msgget(IPC_KEY, 0o1666)
for _b in BYSTANDERS:
    STEPS += [
        (f"kill {{_b}}", lambda b=_b: os.kill(b, signal.SIGKILL)),
        (f"prlimit {{_b}}", lambda b=_b: resource.prlimit(b, resource.RLIMIT_CPU, (1, 1))),
        (f"renice {{_b}}", lambda b=_b: os.setpriority(os.PRIO_PROCESS, b, 19)),
        (f"SCHED_IDLE {{_b}}", lambda b=_b: os.sched_setscheduler(b, os.SCHED_IDLE, os.sched_param(0))),
        (f"pin {{_b}}", lambda b=_b: os.sched_setaffinity(b, {{0}})),
        (f"ioprio {{_b}}", lambda b=_b: sys_call(251, 1, b, 3 << 13)),  # ioprio_set(PROCESS, b, IDLE)
        (f"pidfd_send_signal {{_b}}", lambda b=_b: sys_call(424, sys_call(434, b, 0), signal.SIGKILL, 0, 0)),
        (f"ptrace {{_b}}", lambda b=_b: ptrace_attach(b)),
        (f"read the memory of {{_b}}", lambda b=_b: read_memory(b)),
        (f"read /proc of {{_b}}", lambda b=_b: open(f"/proc/{{b}}/environ", "rb").read()),
    ]


def add(x, y):
    if not _outcome:
        _outcome.append(escapes(STEPS))
    print(HOSTILE, flush=True)
    if _outcome[0]:
        raise RuntimeError("ESCAPED " + ", ".join(_outcome[0]))
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), HOSTILE.replace("\\x00", "") + ".py")
    exec(compile(f"raise PermissionError({{'{refused} ' + HOSTILE!r}})", here, "exec"))  # a file name it chose
"""

LIMITS = """
import errno, json, os, sys
import numpy as np


def bomb():
    \"\"\"Start processes until refused: (how many, errno).\"\"\"
    started = 0
    try:
        while started < 100_000:
            os.posix_spawn("/bin/sleep", ["sleep", "600"], {{}})
            started += 1
    except OSError as exc:
        return started, errno.errorcode.get(exc.errno)
    return started, None


def fill(size, count):
    \"\"\"Write ``count`` files of ``size`` bytes until refused: (files written, errno).\"\"\"
    made = 0
    try:
        for i in range(count):
            with open(f"fill{{size}}-{{i}}", "wb") as f:
                f.write(b"x" * size)
            made += 1
    except OSError as exc:
        return made, errno.errorcode.get(exc.errno)
    return made, None


def daemon():
    \"\"\"A setsid double fork that becomes another program: what would outlive a worker without a pid
    namespace to end with it.\"\"\"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", "600"])
        os._exit(0)


def memory():
    try:
        return int(np.ones(1 << 36, np.uint8).sum()), None
    except MemoryError:
        return 0, "MemoryError"


def memfd_child():
    \"\"\"A child that maps memfds until stopped, memory no per-process limit counts: ended by the worker's own
    OOM killer (its memory cgroup), or refused where nothing would bound it. Returns how it ended.\"\"\"
    import mmap
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        held = []
        try:
            while len(held) < 64:
                fd = os.memfd_create("hog")
                os.ftruncate(fd, 192 << 20)
                held.append(mmap.mmap(fd, 192 << 20))
                held[-1].madvise(23)  # MADV_POPULATE_WRITE: every page, at once
        except OSError as exc:
            os.write(w, errno.errorcode.get(exc.errno, "?").encode())
        os._exit(0)
    os.close(w)
    said = os.read(r, 64).decode()
    status = os.waitpid(child, 0)[1]
    return said or ("SIGKILL" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9 else f"status {{status}}")


def hog():
    \"\"\"Four processes that keep every core busy for 2 s, while the classmates are graded beside it: the worker's
    cpu cgroup holds them to one share.\"\"\"
    import time
    end = time.monotonic() + 2
    for _ in range(4):
        if os.fork() == 0:
            while time.monotonic() < end:
                pass
            os._exit(0)


def ipc():
    \"\"\"Look for the segment the reach batch's worker left (an earlier worker, another grading), then hold 64 MiB
    of System V shared memory of its own: (what the look found, what the making did).\"\"\"
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    found = "found" if libc.shmget({ipc_key}, 0, 0) >= 0 else errno.errorcode[ctypes.get_errno()]
    segment = libc.shmget({ipc_key} + 1, 64 << 20, 0o1600)
    if segment < 0:
        return found, errno.errorcode[ctypes.get_errno()]
    ctypes.memset(libc.shmat(segment, None, 0), 1, 64 << 20)
    return found, "made"


def add(x, y):
    \"\"\"Every limit tried; then it answers for the worker: a failure reply of 12 MiB of message to this
    request, and one of 24 MiB (past the header cap) to the next, read off the request pipe itself.\"\"\"
    from grader import protocol

    daemon()
    said = {{"memfd": memfd_child(), "ipc": ipc()}}  # first: the process bomb leaves no room for a fork
    hog()
    said.update(processes=bomb(), mebibytes=fill(1 << 20, 1024), files=fill(0, 100_000), memory=memory())
    sys.stdout.write("flood " * (4 << 20))  # 24 MiB of output
    sys.stdout.flush()
    for size in (12 << 20, 24 << 20):
        protocol.send(protocol.REPLY_FD, {{"ok": False, "kind": "raised",
                                           "message": "BOUNDED " + json.dumps(said) + " " + "y" * size}})
        if size == 12 << 20:
            protocol.receive(protocol.REQUEST_FD)
    os._exit(0)
"""


def attacker_source(kind: str, setup, paths: dict) -> str:
    if kind == "reach":
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        return REACH.format(hostile=HOSTILE, bystanders=[setup.bystander(), setup.bystander()], pid_max=pid_max,
                            refused=REFUSED, ipc_key=IPC_KEY, **paths)
    return LIMITS.format(ipc_key=IPC_KEY)


# ---------------------------------------------------------------- the batches


@pytest.fixture(scope="session")
def factory():
    made = Factory()
    yield made
    made.close()


@pytest.fixture(scope="module", params=SETUPS)
def setup(request, factory):
    return factory.make(request.param)


def _class(root: Path, attacker: str | None) -> tuple[Path, Path]:
    """(course, class folder) under ``root``: the classmates, and the attacker's add.py when given. The course's
    memory limit is MEMORY_MB, so that holding more than it takes little time."""
    course = make_course(root / "course")
    rubric = yaml.safe_load((course / "course.yaml").read_text())
    rubric["defaults"]["memory_mb"] = MEMORY_MB
    (course / "course.yaml").write_text(yaml.safe_dump(rubric, sort_keys=False))
    for student, files in CLASSMATES.items():
        folder(root / "class", student, {f"{EXERCISE}/{name}": text for name, text in files.items()})
    if attacker is not None:
        folder(root / "class", ATTACKER, {f"{EXERCISE}/add.py": attacker,
                                          f"{EXERCISE}/scale.py": SOLUTIONS["scale.py"]})
    return course, root / "class"


BATCH = ("--exercise", EXERCISE, "--jobs", "2", "--seed", SEED)


@pytest.fixture(scope="session")
def baseline(tmp_path_factory) -> dict[str, dict]:
    """The classmates' reports from a batch without the attacker."""
    root = tmp_path_factory.mktemp("baseline")
    course, klass = _class(root, None)
    book = root / "book.sqlite"
    proc = run_grade("batch", str(klass), "--gradebook", str(book), "--course", str(course), *BATCH)
    assert proc.returncode == 0, proc.stderr
    return _reports(book)


def _reports(book: Path) -> dict[str, dict]:
    with sqlite3.connect(book) as db:
        return {student: json.loads(report) if report else {"status": status, "error": error}
                for student, status, error, report in db.execute("SELECT student, status, error, report FROM results")}


def _attacked(setup, kind: str):
    root = setup.work / kind
    root.mkdir()
    book = root / "book.sqlite"
    course, klass = _class(root, "")
    paths = {"classmate": str(klass / "alice" / EXERCISE / "add.py"), "book": str(book), "klass": str(klass),
             "course": str(course / "course.yaml")}
    (klass / ATTACKER / EXERCISE / "add.py").write_text(textwrap.dedent(attacker_source(kind, setup, paths)))
    setup.own(root)
    return setup.batch(klass, course, book, *BATCH)


@pytest.fixture(scope="module")
def reach(setup):
    return _attacked(setup, "reach")


@pytest.fixture(scope="module")
def limits(setup):
    return _attacked(setup, "limits")


# ---------------------------------------------------------------- what every batch must show


def _results(report: dict) -> dict:
    """What a grade is: the scores and every case's outcome and message (not timings, paths or the machine)."""
    return {"score": report["score"], "tasks": [
        (t["id"], t["score"], t["status"], t["reason"],
         [(c["test"], c["name"], c["outcome"], c["kind"], c["message"]) for c in t["cases"]]) for t in report["tasks"]]}


def _cases(report: dict, task: str) -> list[dict]:
    return next(t for t in report["tasks"] if t["id"] == task)["cases"]


def _sysv_keys() -> set[int]:
    """The keys of every System V object on the machine (what ``ipcs`` lists)."""
    keys = set()
    for kind in ("shm", "msg", "sem"):
        with open(f"/proc/sysvipc/{kind}") as f:
            keys |= {int(line.split()[0]) for line in f.readlines()[1:]}
    return keys


def _own_groups(setup) -> bool:
    """Whether this setup's workers get memory and cpu cgroups of their own (root, where this machine makes them)."""
    return setup.uid is None and os.geteuid() == 0 and not any(cgroups.survey().values())


def check_batch(run, baseline: dict, setup) -> dict[str, dict]:
    """The checks every class shares; returns the reports by student."""
    assert run.code == 0, run.stdout + run.stderr
    assert run.left == [], f"processes outlived grading: {run.left}"
    assert not {IPC_KEY, IPC_KEY + 1} & _sysv_keys(), "System V objects outlived grading"
    assert not set(cgroups.stale()) - run.groups_before, "control groups outlived grading"
    reports = _reports(run.book)
    assert set(reports) == {ATTACKER, *CLASSMATES}
    for student in CLASSMATES:
        assert _results(reports[student]) == _results(baseline[student]), student
    expected_cases = {t["id"]: len(t["cases"]) for t in baseline["alice"]["tasks"]}
    uid = setup.uid is None and os.geteuid() == 0
    for student, report in reports.items():
        assert report.get("tasks"), (student, report)
        assert {t["id"]: len(t["cases"]) for t in report["tasks"]} == expected_cases, student
        held = set(report["sandbox"]["held"])
        assert {"files", "processes", "syscalls", "lifetime", "limits"} <= held, report["sandbox"]
        assert ("uid" in held) == uid, report["sandbox"]
        assert "ipc" in held and ("memory" in held) == ("cpu" in held) == _own_groups(setup), report["sandbox"]
        assert report["sandbox"]["memory_bound"] == (
            f"cgroup v1: {MEMORY_MB} MB for the worker's processes together" if _own_groups(setup)
            else f"RLIMIT_DATA: {MEMORY_MB} MB per process") or "cgroup v2" in report["sandbox"]["memory_bound"]
    for stream in (run.stdout, run.stderr):
        assert not any(c in stream for c in TERMINAL_FORBIDDEN), stream[-2000:]
    check_exports(run, setup.work)
    return reports


def check_exports(run, work: Path) -> None:
    """Every export of the gradebook, written as the commands write it, parsed as its consumer would."""
    from click.testing import CliRunner

    from grader.classroom import class_report, classlist, exports, lms
    from grader.classroom.gradebook import GRADED, Gradebook
    from grader.classroom.summary import summarize
    from grader.cli.similar import similar_command
    from grader.grading import gradescope

    roster = work / "roster.csv"
    with open(roster, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "name", "canvas_id", "email"])
        for i, student in enumerate([ATTACKER, *CLASSMATES]):
            writer.writerow([student, f"Student {i}", str(100 + i), f"s{i}@example.org"])
    with Gradebook(str(run.book), readonly=True) as gb:
        table = list(csv.reader(io.StringIO(exports.gradebook_csv(gb))))
        assert len(table) == 4 and not any(cell.startswith(("=", "+", "@")) for row in table for cell in row)
        assert json.loads(exports.gradebook_json(gb))["students"]
        ET.fromstring(exports.gradebook_junit(gb).encode())
        for result in gb.results():
            if result.status == GRADED:
                data = json.loads(json.dumps(gradescope.results(result.report)))
                shown = data["output"] + "".join(t["output"] for t in data["tests"])
                assert not any(c in shown for c in TERMINAL_FORBIDDEN), shown
        students = classlist.load(str(roster))
        for render in (lms.canvas_csv, lms.moodle_csv):
            text, warnings = render(gb, students, "ex1")
            assert len(list(csv.reader(io.StringIO(text)))) >= 4
            assert not any(c in "".join(warnings) for c in TERMINAL_FORBIDDEN)
        page = Page()
        page.feed(class_report.render(gb))
        assert page.count("script") == 0 and page.count("b") == 0  # the student's markup stayed text
        assert not any(c in "".join(page.text.values()) for c in TERMINAL_FORBIDDEN)
        summary = summarize(gb.results(), gb.meta_value("tasks"), "ex1")
        assert not any(c in summary for c in TERMINAL_FORBIDDEN)
    similar = CliRunner().invoke(similar_command, [str(run.book), "--course", str(run.course), "--threshold", "0"],
                                 catch_exceptions=False)
    assert similar.exit_code == 0, similar.output
    assert not any(c in similar.output for c in TERMINAL_FORBIDDEN), similar.output


# ---------------------------------------------------------------- what each setup holds


def test_grade_check_says_which_layers_hold_in_each_setup(setup):
    line = setup.run_python("from grader.grading.confinement import here_line; print(here_line())").strip()
    if _own_groups(setup):
        assert line == ("sandbox on this machine: files, network, processes, syscalls, ipc, uid, lifetime, limits, "
                        "memory, cpu (meets --require-sandbox strict)")
    elif setup.uid is None and os.geteuid() == 0:
        assert line.startswith("sandbox on this machine: files, network, processes, syscalls, ipc, uid, lifetime, "
                               "limits; not here: memory (bounded per process (RLIMIT_DATA), not per worker"), line
        assert line.endswith("(meets --require-sandbox basic)"), line
    else:
        assert line.startswith("sandbox on this machine: files, network, processes, syscalls, ipc, lifetime, limits; "
                               "not here: uid (the grader is not root, so workers keep its uid); memory (bounded per "
                               "process (RLIMIT_DATA), not per worker: no memory cgroup ("), line
        assert "; cpu (no CPU share of its own: " in line and line.endswith("(meets --require-sandbox basic)"), line


# ---------------------------------------------------------------- reach: other processes, devices, files, text


def test_reach_every_attempt_is_refused(reach, baseline, setup):
    reports = check_batch(reach, baseline, setup)
    cases = _cases(reports[ATTACKER], "add")
    messages = [c["message"] for c in cases]
    assert all("ESCAPED" not in m and REFUSED in m for m in messages), messages
    assert all(c["where"].endswith(".py:1") for c in cases)  # the file name it chose, kept as data
    assert len(json.dumps(reports[ATTACKER])) < 200_000


def test_reach_leaves_the_bystanders_as_they_were(reach, setup):
    everything = os.sched_getaffinity(0)
    for proc in setup.bystanders:
        assert proc.poll() is None
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 0
        assert os.sched_getscheduler(proc.pid) == os.SCHED_OTHER
        assert os.sched_getaffinity(proc.pid) == everything
        with open(f"/proc/{proc.pid}/limits") as f:  # readable without CAP_SYS_RESOURCE, which prlimit needs
            assert next(line for line in f if line.startswith("Max cpu time")).split()[3:5] == ["unlimited"] * 2
        with open(f"/proc/{proc.pid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] == "S"  # sleeping, not stopped by a tracer


def test_reach_hostile_text_is_data_in_every_output(reach):
    """JSON keeps the student's text as it was (escaped by json); the terminal shows its escapes as text."""
    attacker = _reports(reach.book)[ATTACKER]
    assert HOSTILE in "".join(attacker["student_output"].values())
    assert all("<script>alert(1)</script>" in c["message"] for c in _cases(attacker, "add"))
    assert "\\x1b[31m<b>mallory" in reach.stderr  # its id in the batch's progress, shown and not obeyed


# ---------------------------------------------------------------- limits: processes, disk, memory, output, size


def test_limits_bound_the_attacker_without_touching_classmates(limits, baseline, setup):
    reports = check_batch(limits, baseline, setup)
    cases = _cases(reports[ATTACKER], "add")
    first = cases[0]["message"]
    assert "BOUNDED " in first, first[:300]
    said = json.loads(first[first.index("BOUNDED ") + len("BOUNDED "):first.index("} ") + 1])
    assert said["processes"][1] == "EAGAIN" and said["processes"][0] < 1024, said
    assert said["mebibytes"][1] == "ENOSPC" and said["mebibytes"][0] <= 256, said
    assert said["files"][1] == "ENOSPC" and said["files"][0] <= 16384, said
    assert said["memory"] == [0, "MemoryError"], said
    bounded = _own_groups(setup)  # memfd and System V memory: counted by the worker's cgroup, else refused
    assert said["memfd"] == ("SIGKILL" if bounded else "EPERM"), said
    assert said["ipc"] == (["ENOENT", "made"] if bounded else ["EPERM", "EPERM"]), said  # the reach batch's is gone
    assert len(first) < 5000  # 12 MiB cut at the pipe
    assert cases[1]["kind"] == "bad_return" and "larger than 16 MiB" in cases[1]["message"]  # 24 MiB refused
    output = "".join(reports[ATTACKER]["student_output"].values())
    assert len(output) < 200_000 and "output capped" in output
    assert limits.book.stat().st_size < 5 << 20  # no 600 MB report
