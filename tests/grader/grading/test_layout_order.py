"""Cases run one layout after another, and each layout's workers end with its last case.

Every layout's worker and clean worker used to live until the end of the run (the cases were
interleaved across layouts), so a run held every layout's processes at once. Now the cases of one
layout run together and its processes are gone before the next layout starts, while the report keeps
the suite's order (each test at every layout, tests top to bottom).
"""

from __future__ import annotations

import os

import pytest
from conftest import ROOT

from grader.course import load_course
from grader.grading import pipeline
from grader.workers.pool import WorkerPool

DEVICES = (1, 2)
LISTED = [  # the order the report showed before the cases ran layout by layout (the suite's order)
    "test_dot_matches_numpy[1dev-5]", "test_dot_matches_numpy[1dev-37]", "test_dot_matches_numpy[2dev-5]",
    "test_dot_matches_numpy[2dev-37]", "test_dot_other_lengths[1dev-1-float32]", "test_dot_other_lengths[1dev-3-int32]",
    "test_dot_other_lengths[1dev-1001-float32]", "test_dot_other_lengths[2dev-1-float32]",
    "test_dot_other_lengths[2dev-3-int32]", "test_dot_other_lengths[2dev-1001-float32]",
    "test_dot_uses_one_all_reduce[2dev]"]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_each_layouts_workers_end_with_its_last_case_and_the_report_keeps_the_suites_order(monkeypatch):
    course = load_course(str(ROOT / "course.yaml"))
    exercise = course.exercise("exercise7").only(["dot"])
    asked, ended = [], {}
    request, finish = WorkerPool.request, WorkerPool.finish

    def recording_request(self, layout, *args, **kwargs):
        asked.append(layout.devices)
        return request(self, layout, *args, **kwargs)

    def recording_finish(self, layout):
        pids = [w.proc.pid for w in (self._workers.get(layout), self._clean.get(layout)) if w and w.proc]
        finish(self, layout)
        ended[layout.devices] = (pids, [pid for pid in pids if _alive(pid)])

    monkeypatch.setattr(WorkerPool, "request", recording_request)
    monkeypatch.setattr(WorkerPool, "finish", recording_finish)

    report = pipeline.grade_submission(course, exercise, str(ROOT / "solutions"), devices=DEVICES, seed=3)

    assert asked == sorted(asked) and set(asked) == set(DEVICES)  # every 1-device call before any 2-device one
    for n in DEVICES:
        pids, alive = ended[n]
        # dot's program test runs from 2 devices on: there a clean worker too
        assert len(pids) == (2 if n > 1 else 1), f"the student's and the clean worker at {n} devices: {pids}"
        assert alive == [], f"still running after the last case at {n} devices: {alive}"
    assert [c.nodeid.rpartition("::")[2] for c in report.run.cases] == LISTED
    assert report.score.total == report.score.max_total
