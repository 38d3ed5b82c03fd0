"""Course soundness for tasks devices, basics, shard and collectives: solutions full marks, stubs zero."""

import pytest

from catalogue import grade_tasks
from conftest import ROOT, task

TASKS = ("devices", "basics", "shard", "collectives")


@pytest.mark.parametrize("base, full", [("solutions", True), ("exercises", False)])
def test_solutions_full_and_stubs_zero(base, full):
    report = grade_tasks(ROOT / base, *TASKS, devices="1,2,4,8")
    for task_id in TASKS:
        t = task(report, task_id)
        if full:
            assert t["score"] == t["max_score"], f"solution of {task_id} lost points: {t['reason']}"
            assert t["cases"] and all(c["outcome"] == "passed" for c in t["cases"])
            assert {c["devices"] for c in t["cases"]} == {1, 2, 4, 8}
        else:
            assert t["score"] == 0 and t["status"] == "not started", f"stub of {task_id}: {t['status']} {t['reason']}"
