"""--devices picks among the device counts a task is graded at, and never adds one course.yaml leaves
out: ring_optimal is graded at 4 and 8 devices only (on 1 or 2 the simple ring meets its bound), so
asking for 1, 2, 4 and 8 must not hand the simple ring points its grade would not give. ring's structural tests
run at 2 devices too, where its value tests run (on 2 devices they read the ppermutes and their bytes, not the
schedule: direct sends, recursive doubling and the ring are one and the same ppermute there)."""

from __future__ import annotations

from conftest import ROOT, grade_json, task


def test_devices_asked_for_keep_to_the_tasks_own_counts():
    report = grade_json(ROOT / "solutions" / "exercise7", "--task", "ring_optimal,dot,ring", "--devices", "2,4")
    assert {c["devices"] for c in task(report, "ring_optimal")["cases"]} == {4}
    ring = task(report, "ring")["cases"]
    assert {c["devices"] for c in ring if c["test"] == "test_ring_allreduce_uses_ppermute_only"} == {2, 4}
    assert {c["devices"] for c in ring if c["test"] == "test_ring_shift_default_is_one_ppermute"} == {2, 4}
    assert {c["devices"] for c in task(report, "dot")["cases"]} == {2, 4}
