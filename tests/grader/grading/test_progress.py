"""Progress of one grading run: a live line on a terminal's stderr, nothing in a pipe or a CI log."""

from __future__ import annotations

import os
import pty
import select
import subprocess

from conftest import GRADE, ROOT, run_grade
from toycourse import make_course


def _grade_with_stderr_on_a_terminal(args) -> tuple[int, str, str]:
    """Run grade with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, terminal text)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*GRADE, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    seen = b""
    while True:
        if select.select([leader], [], [], 60)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: grade has exited
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read()
    os.close(leader)
    return proc.wait(), out, seen.decode("utf-8", "replace")


def test_a_terminal_gets_a_live_line_that_is_erased_before_the_report(tmp_path):
    root = make_course(tmp_path)
    code, out, terminal = _grade_with_stderr_on_a_terminal(["ex1", "--course", str(root), "--submission",
                                                            str(root / "solutions"), "--seed", "1"])
    assert code == 0, terminal
    assert "grade ex1: starting the workers" in terminal
    assert "add 2/2 cases" in terminal and "1 of 2 tasks done" in terminal
    assert "scale 1/1 cases · 2 of 2 tasks done" in terminal
    assert terminal.endswith("\r\x1b[K"), "the line is erased before the report"
    assert out.startswith("toy-course · ex1") and "\r" not in out


def test_a_pipe_gets_no_progress(tmp_path):
    root = make_course(tmp_path)
    proc = run_grade("ex1", "--course", str(root), "--submission", str(root / "solutions"), "--seed", "1")
    assert proc.returncode == 0
    assert proc.stderr == ""
    assert "\r" not in proc.stdout and "starting the workers" not in proc.stdout
