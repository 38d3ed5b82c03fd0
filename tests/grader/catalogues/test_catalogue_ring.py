"""Wrong submissions for task ring: each loses points on ring and says why.

Mistakes in ring_allreduce alone leave ring_optimal (same module) at full points; mistakes in
ring_shift, which every ring uses, are checked against dot instead.
"""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

SHIFT = "perm=[(i, (i + shift) % n) for i in range(n)]"
LOOP = "return lax.fori_loop(0, n - 1, step, (x, x))[0]"

WRONG = {
    "the chapter's hard-coded 4 devices": Wrong(
        {"ring": mutate("ring", (SHIFT, "perm=[(i, (i + shift) % 4) for i in range(4)]"))},
        "4,8", says=("[8 devices] ring_shift(x, axis_name, shift=3): your ring wraps around after 4 devices, "
                     "but there are 8",)),
    "ring direction reversed": Wrong(
        {"ring": mutate("ring", (SHIFT, "perm=[(i, (i - shift) % n) for i in range(n)]"))},
        "4", says=("moves blocks the wrong way",)),
    "all-reduce with lax.psum": Wrong(
        {"ring": mutate("ring", (LOOP, "return lax.psum(x, axis_name)"))},
        "4", says=("runs an all-reduce (from lax.psum)",), intact="ring_optimal"),
    "all-reduce by gathering every block": Wrong(
        {"ring": mutate("ring", (LOOP, "return lax.all_gather(x, axis_name).sum(axis=0)"))},
        "4", says=("runs an all-gather (from lax.all_gather)",), intact="ring_optimal"),
    "one step too few": Wrong(
        {"ring": mutate("ring", (LOOP, "return lax.fori_loop(0, n - 2, step, (x, x))[0]"))},
        "4", says=("leaves out x's block 1 (device 1's) from device 0's result",),
        intact="ring_optimal"),
    "one step too many": Wrong(
        {"ring": mutate("ring", (LOOP, "return lax.fori_loop(0, n, step, (x, x))[0]"))},
        "4", says=("counts twice x's block 0 (device 0's) from device 0's result",), intact="ring_optimal"),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "int blocks summed in float32": Wrong(
        apart("ring", ("total, block = x, x", "total, block = x.astype(jnp.float32), x")), "2",
        says=("dtype changed from int32 to float32", "accumulate in the input's dtype")),
    "the running sum passed around the ring": Wrong(
        apart("ring", ("block = ring_shift(block, axis_name)\n        total = total + block",
                       "total = total + ring_shift(total, axis_name)")), "4",
        says=("counts x's blocks unevenly in each device's result: device 0's counts block 0 once, block 1 once, block 2 "
              "3 times and block 3 3 times",), never=("lax.psum", "lax.pmean", "collective ("),
        intact="ring_optimal"),
    "the sum started from zeros": Wrong(
        apart("ring", ("total, block = x, x", "total, block = jnp.zeros_like(x), x")), "2",
        says=("leaves out x's block 0 (device 0's) from device 0's result",), never=("lax.psum", "lax.pmean", "collective (")),
    "destinations not wrapped around the ring": Wrong(
        apart("ring", ("(i, (i + shift) % n)", "(i, i + shift)")), "2",
        says=("ring_shift() raised IndexError", "not on the ring", "% n")),
}


RIGHT = {
    "a Python loop, axis size from psum(1)": Right({"ring": mutate(
        "ring", ("n = lax.axis_size(axis_name)\n\n    def step", "n = lax.psum(1, axis_name)\n\n    def step"),
        (LOOP, "total = passing = x\n    for _ in range(n - 1):\n        passing = ring_shift(passing, axis_name)\n"
               "        total = total + passing\n    return total"))}),
    # Round 55 (written apart): the block sent in two halves the same way, each half a chain of its own: two starts
    # along one route (grader.suite.rings.parts).
    "the block's halves passed on the same way": Right({"ring": mutate(
        "ring", (LOOP, "flat = x.reshape(-1)\n    h = flat.shape[0] // 2\n    total = passing = (flat[:h], flat[h:])\n"
                       "    for _ in range(n - 1):\n        passing = tuple(ring_shift(p, axis_name) for p in passing)\n"
                       "        total = tuple(t + p for t, p in zip(total, passing))\n"
                       "    return jnp.concatenate(total).reshape(x.shape)"))}, devices="4"),
    # Half the blocks travel one way and half the other: two routes, each the other's reverse, two starts.
    "a ring that runs both ways at once": Right({"ring": mutate(
        "ring", (LOOP, "total = right = left = x\n    for _ in range(n // 2):\n"
                       "        right = ring_shift(right, axis_name)\n        total = total + right\n"
                       "    for _ in range((n - 1) // 2):\n        left = ring_shift(left, axis_name, shift=-1)\n"
                       "        total = total + left\n    return total"))}),
}


CATALOGUE = Catalogue("ring", WRONG, RIGHT, intact="dot")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_ring_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_ring_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
