"""Wrong submissions for task ring: each loses points on ring and says why.

Mistakes in ring_allreduce alone leave ring_optimal (same module) at full points; mistakes in
ring_shift, which every ring uses, are checked against dot instead.
"""

import pytest

from catalogue import expect_caught, expect_full_marks, mutate

SHIFT = "perm=[(i, (i + shift) % n) for i in range(n)]"
LOOP = "return lax.fori_loop(0, n - 1, step, (x, x))[0]"

WRONG = {
    "the chapter's hard-coded 4 devices": (
        mutate("ring", (SHIFT, "perm=[(i, (i + shift) % 4) for i in range(4)]")), "dot", "4,8",
        "[8 devices] ring_shift(x, axis_name, shift=3): your ring wraps around after 4 devices, but there are 8"),
    "ring direction reversed": (
        mutate("ring", (SHIFT, "perm=[(i, (i - shift) % n) for i in range(n)]")), "dot", "4",
        "moves blocks the wrong way"),
    "all-reduce with lax.psum": (
        mutate("ring", (LOOP, "return lax.psum(x, axis_name)")), "ring_optimal", "4",
        "runs an all-reduce (from lax.psum)"),
    "all-reduce by gathering every block": (
        mutate("ring", (LOOP, "return lax.all_gather(x, axis_name).sum(axis=0)")), "ring_optimal", "4",
        "runs an all-gather (from lax.all_gather)"),
    "one step too few": (
        mutate("ring", (LOOP, "return lax.fori_loop(0, n - 2, step, (x, x))[0]")), "ring_optimal", "4",
        "on every device leaves out one device's contribution (device 0 misses device 1's)"),
    "one step too many": (
        mutate("ring", (LOOP, "return lax.fori_loop(0, n, step, (x, x))[0]")), "ring_optimal", "4",
        "adds every device's own block twice"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_ring_is_caught(make_submission, mistake):
    source, intact, devices, reason = WRONG[mistake]
    expect_caught(make_submission({"ring": source}), "ring", intact, devices, reason)


RIGHT = {
    "a Python loop, axis size from psum(1)": mutate(
        "ring", ("n = lax.axis_size(axis_name)\n\n    def step", "n = lax.psum(1, axis_name)\n\n    def step"),
        (LOOP, "total = passing = x\n    for _ in range(n - 1):\n        passing = ring_shift(passing, axis_name)\n"
               "        total = total + passing\n    return total")),
}


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_ring_keeps_full_marks(make_submission, way):
    expect_full_marks(make_submission({"ring": RIGHT[way]}), "ring", "1,4")
