"""Hostile submissions: each attack of issue 11 is tried from inside a student's distributed_dot.

Every submission is the reference solution with an attack run first (once per worker process).
An attack is a list of steps; a step that works is an escape, named in the verdict ("ESCAPED ...");
when every step is refused the student's code sees an ordinary error ("every attempt was
refused"), which is what the grader reports. Lifetime attacks (daemons, fork bombs) leave the
answer correct and must leave nothing running once grading returns. After every run the course,
the solutions, the hidden suite and the engine are byte for byte what they were.

Graded: exercise7 --task dot --devices 1,2 (about 3 s each).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from classroom import dot_files, folder, rows
from conftest import ROOT, grade_json, run_grade, task
from grader.grading import integrity
from toycourse import EXERCISE, SOLUTIONS, make_course

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

GUARDED = [str(ROOT / "course.yaml"), str(ROOT / "tests" / "exercise7"), str(ROOT / "solutions"),
           str(ROOT / "grader")]
SITE = next(p for p in sys.path if p.endswith("site-packages"))
REFUSED = "every attempt was refused"

PRELUDE = """
import os, signal, socket, sys, time

ROOT = {root!r}
_outcome = []


"""
ATTACK = """


def _attack():
    \"\"\"Run every step once per process; a step that does not raise OSError escaped.\"\"\"
    if not _outcome:
        escaped = []
        for name, step in STEPS:
            try:
                step()
                escaped.append(name)
            except OSError:
                pass
        _outcome.append(escaped)
    if _outcome[0]:
        raise RuntimeError("ESCAPED " + ", ".join(_outcome[0]))
    raise PermissionError("{refused}")


def distributed_dot(x, y):
    if STEPS:
        _attack()
    return _honest(x, y)
"""


def hostile(steps: str) -> str:
    """The reference solution (its distributed_dot renamed _honest), the attack's ``steps``, and the driver."""
    honest = (ROOT / "solutions" / "exercise7" / "dot.py").read_text().replace("def distributed_dot(", "def _honest(")
    return PRELUDE.format(root=str(ROOT)) + honest + "\n\n" + textwrap.dedent(steps) + ATTACK.format(refused=REFUSED)


@pytest.fixture
def guarded():
    """Fails the test if grading changed the course, the solutions, the hidden suite or the engine."""
    before = integrity.snapshot(GUARDED)
    yield
    integrity.verify(before, GUARDED)


def grade_dot(submission) -> dict:
    return task(grade_json(submission, "--task", "dot", "--devices", "1,2"), "dot")


def expect_refused(dot: dict) -> None:
    """Every case failed because the attack was refused inside the student's code, and nothing escaped."""
    assert dot["score"] == 0, dot["reason"]
    messages = {c["message"] for c in dot["cases"]}
    assert all("ESCAPED" not in m for m in messages), messages
    assert all(REFUSED in m for m in messages), messages


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def printed_pids(report_output: dict) -> list[int]:
    return [int(line.split()[1]) for text in report_output.values() for line in text.splitlines()
            if line.startswith("PID ")]


# ---------------------------------------------------------------- files


def test_reading_the_solution_and_the_hidden_tests_is_refused(make_submission, guarded):
    dot = grade_dot(make_submission({"dot": hostile("""
        STEPS = [
            ("solution", lambda: open(ROOT + "/solutions/exercise7/dot.py").read()),
            ("hidden tests", lambda: open(ROOT + "/tests/exercise7/test_dot.py").read()),
            ("course folder", lambda: os.listdir(ROOT)),
            ("suite listing", lambda: os.listdir(ROOT + "/tests/exercise7")),
            ("course.yaml", lambda: open(ROOT + "/course.yaml").read()),
        ]
    """)}))
    expect_refused(dot)


def test_rewriting_the_course_or_planting_bytecode_is_refused(make_submission, guarded):
    dot = grade_dot(make_submission({"dot": hostile("""
        def plant():
            os.makedirs(ROOT + "/tests/exercise7/__pycache__", exist_ok=True)
            with open(ROOT + "/tests/exercise7/__pycache__/test_dot.cpython-311-pytest-8.0.pyc", "wb") as f:
                f.write(b"forged")
        STEPS = [
            ("course.yaml", lambda: open(ROOT + "/course.yaml", "a").write("# points: 1000")),
            ("hidden test", lambda: open(ROOT + "/tests/exercise7/test_dot.py", "w").write("")),
            ("new test", lambda: open(ROOT + "/tests/exercise7/test_free.py", "w").write("")),
            ("pycache", plant),
        ]
    """)}))
    expect_refused(dot)


def test_writing_into_the_engine_or_site_packages_is_refused(make_submission, guarded):
    dot = grade_dot(make_submission({"dot": hostile(f"""
        STEPS = [
            ("scoring", lambda: open(ROOT + "/grader/grading/scoring.py", "a").write("# x")),
            ("engine pycache", lambda: open(ROOT + "/grader/grading/__pycache__/evil.pyc", "wb").write(b"x")),
            ("pth", lambda: open({SITE + '/zz_evil.pth'!r}, "w").write("import os")),
        ]
    """)}))
    expect_refused(dot)
    assert not os.path.exists(SITE + "/zz_evil.pth")


def test_reading_the_graders_environment_and_command_line_is_refused(make_submission, guarded):
    dot = grade_dot(make_submission({"dot": hostile("""
        STEPS = [
            ("parent environ", lambda: open(f"/proc/{os.getppid()}/environ").read()),
            ("parent cmdline", lambda: open(f"/proc/{os.getppid()}/cmdline").read()),
            ("parent cwd", lambda: os.listdir(f"/proc/{os.getppid()}/cwd")),
            ("init environ", lambda: open("/proc/1/environ").read()),
            ("all processes", lambda: [open(f"/proc/{p}/cmdline").read() for p in os.listdir("/proc")
                                       if p.isdigit() and int(p) != os.getpid()]),
        ]
    """)}))
    expect_refused(dot)


# ---------------------------------------------------------------- network


def test_tcp_udp_and_abstract_sockets_are_refused(make_submission, guarded):
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    abstract_name = f"\0pmap-hostile-{os.getpid()}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(abstract_name)
    abstract.listen(8)
    abstract.setblocking(False)
    try:
        dot = grade_dot(make_submission({"dot": hostile(f"""
            def connect(family, address):
                with socket.socket(family, socket.SOCK_STREAM) as s:
                    s.settimeout(2)
                    s.connect(address)
            def udp():
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.sendto(b"leak", ("127.0.0.1", {udp.getsockname()[1]}))
            def listen():
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind(("0.0.0.0", 0))
                    s.listen(1)
            STEPS = [
                ("tcp", lambda: connect(socket.AF_INET, ("127.0.0.1", {tcp.getsockname()[1]}))),
                ("udp", udp),
                ("listen", listen),
                ("abstract", lambda: connect(socket.AF_UNIX, {abstract_name!r})),
            ]
        """)}))
        expect_refused(dot)
        for server in (tcp, abstract):
            with pytest.raises(BlockingIOError):
                server.accept()
        with pytest.raises(BlockingIOError):
            udp.recv(16)
    finally:
        for s in (tcp, udp, abstract):
            s.close()


# ---------------------------------------------------------------- signals


def test_signalling_the_grader_or_another_process_is_refused(make_submission, guarded):
    bystander = subprocess.Popen(["sleep", "120"])  # a sibling grading, say
    try:
        dot = grade_dot(make_submission({"dot": hostile(f"""
            def probe_neighbours():
                me, parent = os.getpid(), os.getppid()
                for pid in range(max(2, parent - 300), parent):
                    if pid != me:
                        try:
                            os.kill(pid, 0)  # 0 asks only whether it could be signalled
                        except (ProcessLookupError, PermissionError):
                            continue
                        return  # one it may signal: escaped
                raise PermissionError("no neighbour reachable")
            STEPS = [
                ("parent", lambda: os.kill(os.getppid(), signal.SIGKILL)),
                ("bystander", lambda: os.kill({bystander.pid}, signal.SIGKILL)),
                ("init", lambda: os.kill(1, 0)),
                ("neighbours", probe_neighbours),
            ]
        """)}))
        expect_refused(dot)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


# ---------------------------------------------------------------- lifetime and resources


SURVIVOR = """
def spawn_survivor(then_exit):
    if _outcome:
        return
    _outcome.append([])
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                print("PID", os.getpid(), flush=True)
                time.sleep(2)
                with open({marker!r}, "w") as f:  # refused by the sandbox, and it should be dead by now anyway
                    f.write("I outlived the grader")
            finally:
                os._exit(0)  # never back into the worker's loop: it holds the worker's pipes
        os._exit(0)
    time.sleep(0.3)
    if then_exit:
        os._exit(0)  # the worker leaves first: its orphan must not stay behind
"""


@pytest.mark.parametrize("worker_exits", [False, True], ids=["worker-lives", "worker-exits"])
def test_a_setsid_double_fork_survivor_does_not_outlive_grading(make_submission, guarded, tmp_path, worker_exits):
    marker = tmp_path / "outlived.txt"
    source = hostile("STEPS = []\n" + SURVIVOR.format(marker=str(marker))).replace(
        "    if STEPS:\n        _attack()", f"    spawn_survivor({worker_exits})")
    # The survivor holds the worker's reply pipe open, so a worker that exits is noticed at the time limit:
    # one device count and a short limit keep that quick.
    limits = ("--devices", "1", "--timeout", "2") if worker_exits else ("--devices", "1,2")
    report = grade_json(make_submission({"dot": source}), "--task", "dot", *limits)
    dot = task(report, "dot")
    pids = printed_pids(report["student_output"])
    assert pids, report["student_output"]
    assert all(gone(pid) for pid in pids), [p for p in pids if not gone(p)]
    time.sleep(2.5)  # past the survivor's wake-up
    assert not marker.exists()
    if worker_exits:
        assert {c["kind"] for c in dot["cases"]} <= {"died", "timeout"} and dot["score"] == 0, dot["reason"]
    else:
        assert dot["score"] == dot["max_score"], dot["reason"]


def test_a_fork_bomb_leaves_nothing_running(make_submission, guarded):
    source = hostile("""
        STEPS = []
        def bomb():
            if _outcome:
                return
            _outcome.append([])
            for _ in range(150):
                try:
                    pid = os.fork()
                except OSError:
                    break  # the process limit of a uid of its own
                if pid == 0:
                    os.setsid()
                    print("PID", os.getpid(), flush=True)
                    time.sleep(120)
                    os._exit(0)
    """).replace("    if STEPS:\n        _attack()", "    bomb()")
    report = grade_json(make_submission({"dot": source}), "--task", "dot", "--devices", "1,2")
    assert task(report, "dot")["score"] == task(report, "dot")["max_score"]
    pids = printed_pids(report["student_output"])
    assert len(pids) > 10
    assert all(gone(pid) for pid in pids), [p for p in pids if not gone(p)]


def test_filling_the_disk_stops_at_the_file_size_limit_and_outside_the_scratch(make_submission, guarded):
    dot = grade_dot(make_submission({"dot": hostile("""
        def fill(path):
            chunk = b"x" * (16 << 20)
            with open(path, "wb") as f:
                for _ in range(20):  # 320 MiB, past the 256 MiB limit
                    f.write(chunk)
        STEPS = [
            ("tmp", lambda: fill("/tmp/pmap-hostile-fill")),
            ("scratch", lambda: fill("fill.bin")),
        ]
    """)}))
    expect_refused(dot)
    assert not os.path.exists("/tmp/pmap-hostile-fill")


def test_a_scratch_made_unreadable_is_removed_all_the_same(make_submission):
    source = hostile("""
        STEPS = []
        def lock_up():
            if _outcome:
                return
            _outcome.append([])
            locked = f"locked{os.getpid()}"  # workers of both device counts share the scratch
            os.makedirs(locked + "/inner")
            open(locked + "/inner/data.bin", "wb").write(b"x" * 1000)
            os.symlink("/etc", locked + "/etc")  # chmod must not follow it
            os.chmod(locked + "/inner", 0)
            os.chmod(locked, 0)
            print("SCRATCH", os.getcwd(), flush=True)
    """).replace("    if STEPS:\n        _attack()", "    lock_up()")
    report = grade_json(make_submission({"dot": source}), "--task", "dot", "--devices", "1,2")
    assert task(report, "dot")["score"] == task(report, "dot")["max_score"], task(report, "dot")["reason"]
    scratches = [line.split()[1] for text in report["student_output"].values() for line in text.splitlines()
                 if line.startswith("SCRATCH ")]
    assert scratches and not any(os.path.exists(s) for s in scratches)
    assert os.stat("/etc").st_mode & 0o777 == 0o755


def test_the_report_says_what_confined_the_workers(make_submission):
    report = grade_json(make_submission({}), "--task", "dot", "--devices", "1,2")
    sandbox = report["sandbox"]
    assert task(report, "dot")["score"] == task(report, "dot")["max_score"]
    assert {"files", "syscalls", "lifetime", "limits"} <= set(sandbox["held"])
    assert sandbox["workers"] >= 2 and set(sandbox["held"]).isdisjoint(sandbox["missing"])
    assert json.dumps(sandbox)  # plain data, as the gradebook stores it


# ---------------------------------------------------------------- a batch, and the Gradescope layout


def test_in_a_batch_a_student_reaches_no_classmate_nor_the_gradebook(tmp_path, guarded):
    submissions, book = tmp_path / "submissions", tmp_path / "class.sqlite"
    alice = folder(submissions, "alice", dot_files("correct"))
    alice_dot = alice / "exercise7" / "dot.py"
    mallory = folder(submissions, "mallory", {"exercise7/dot.py": hostile(f"""
        def kill_siblings():
            mine = {{int(t) for t in os.listdir("/proc/self/task")}}  # its own threads answer to kill() too
            parent = os.getppid()
            for pid in range(max(2, parent - 300), parent + 300):
                if pid not in mine:
                    try:
                        os.kill(pid, 0)
                    except (ProcessLookupError, PermissionError):
                        continue
                    return
            raise PermissionError("no sibling reachable")
        STEPS = [
            ("copy classmate", lambda: open({str(alice_dot)!r}).read()),
            ("overwrite classmate", lambda: open({str(alice_dot)!r}, "a").write("raise SystemExit")),
            ("live scratch copies", lambda: os.listdir("/tmp")),
            ("gradebook", lambda: open({str(book)!r}, "r+b").write(b"x")),
            ("siblings", kill_siblings),
        ]
    """)})
    before = alice_dot.read_text()
    proc = run_grade("batch", str(submissions), "--exercise", "exercise7", "--task", "dot", "--devices", "1,2",
                     "--jobs", "2", "--gradebook", str(book))
    assert proc.returncode == 0, proc.stderr
    assert alice_dot.read_text() == before and mallory.is_dir()
    scores = {student: (status, score) for student, status, score, *_ in rows(book)}
    points = task(json.loads(_stored_report(book, "alice")), "dot")["max_score"]
    assert scores == {"alice": ("graded", points), "mallory": ("graded", 0.0)}
    expect_refused(task(json.loads(_stored_report(book, "mallory")), "dot"))
    assert json.loads(_stored_report(book, "mallory"))["sandbox"]["held"]  # the gradebook keeps the record


def _stored_report(book, student: str) -> str:
    import sqlite3

    with sqlite3.connect(book) as db:
        return db.execute("SELECT report FROM results WHERE student = ?", (student,)).fetchone()[0]


def test_in_the_gradescope_layout_a_survivor_cannot_rewrite_results_json(tmp_path):
    course = make_course(tmp_path / "course")
    root = tmp_path / "autograder"
    results = root / "results" / "results.json"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "scale.py").write_text(SOLUTIONS["scale.py"])
    (root / "submission" / "add.py").write_text(textwrap.dedent(f"""
        import os, time
        _spawned = []

        def add(x, y):
            if not _spawned:
                _spawned.append(1)
                if os.fork() == 0:
                    os.setsid()
                    if os.fork() == 0:
                        try:
                            time.sleep(2)
                            with open({str(results)!r}, "w") as f:
                                f.write('{{"score": 1000}}')
                        finally:
                            os._exit(0)
                    os._exit(0)
                time.sleep(0.2)
            return x + y
    """))
    snapshot = integrity.snapshot([str(course)])
    proc = run_grade("autograde", EXERCISE, "--root", str(root), cwd=course)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = results.read_text()
    time.sleep(2.5)  # past the survivor's wake-up
    assert results.read_text() == written
    data = json.loads(written)
    assert data["score"] == 15 and "files" in data["extra_data"]["sandbox"]["held"]
    integrity.verify(snapshot, [str(course)])
