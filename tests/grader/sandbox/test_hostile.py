"""Hostile submissions against one student's own grading: files, the network, the report's record.

Every submission is the reference solution with an attack run first (once per worker process).
An attack is a list of steps; a step that works is an escape, named in the verdict ("ESCAPED ...");
when every step is refused the student's code sees an ordinary error ("every attempt was
refused"), which is what the grader reports. After every run the course, the solutions, the
hidden suite and the engine are byte for byte what they were. What reaches other processes,
resource limits, lifetime and hostile text are the catalogue of test_isolation.py, in a batch
beside classmates and in each setup.

Graded: exercise7 --task dot --devices 1,2 (about 3 s each).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import time

import pytest

from attacks import TRY_STEPS
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
ATTACK = TRY_STEPS + """


def _attack():
    \"\"\"Run every step once per process.\"\"\"
    if not _outcome:
        _outcome.append(escapes(STEPS))
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


# ---------------------------------------------------------------- the scratch and the record


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


# ---------------------------------------------------------------- the Gradescope layout


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
