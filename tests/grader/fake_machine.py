"""Grading on a machine the test makes up: the solutions of task dot where JAX sees a given number of devices.

The made-up devices are JAX's own CPU devices: as "cpu" devices (--backend gpu's meaning: a case that
needs more is not run here) or, with ``gpus``, as GPUs of a made-up kind graded the way --backend auto
grades a real GPU machine (a case that needs more runs on emulated CPU devices).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT


def grade_on_a_machine_with(devices_here: int, gpus: bool = False) -> dict:
    """Grade the solutions in a fresh process that believes the machine has ``devices_here`` real devices."""
    machine = (f'Backend(name="gpu", platform="cpu", kind="fake GPU", available={devices_here}, fallback=True)' if gpus
               else f'Backend(name="cpu", platform="cpu", kind="cpu", available={devices_here})')
    script = textwrap.dedent(f"""
        import json
        from grader.course import find_course
        from grader.grading.pipeline import grade_submission
        from grader.workers.backends import Backend
        course = find_course({str(ROOT)!r})
        ex = course.exercise("exercise7").only(["dot"])
        machine = {machine}
        report = grade_submission(course, ex, {str(ROOT / "solutions")!r}, devices=(1, 2, 4), seed=7, backend=machine)
        print(json.dumps({{"report": report.to_dict(), "text": report.to_text()}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
