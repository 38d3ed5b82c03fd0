"""Wrong submissions for exercise 8's task rings: each loses points on rings, says why, and leaves layouts whole."""

import pytest

from catalogue import Catalogue, Right, Wrong, mutate

GATHER_START = "    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)\n    gathered ="
GATHER_LOOP = "    for step in range(1, n):\n        passing = _to_next(passing, axis_name, n)"
SCATTER_LOOP = "    for step in range(1, n):\n        total = _to_next(total, axis_name, n)"
GATHER_TAIL = """    passing = block
    for step in range(1, n):
        passing = _to_next(passing, axis_name, n)  # now device (me - step)'s block
        gathered = gathered.at[(me - step) % n].set(passing)
    return gathered.reshape"""
SCATTER_TAIL = """    total = chunks[(me - 1) % n]
    for step in range(1, n):
        total = _to_next(total, axis_name, n) + chunks[(me - step - 1) % n]
    return total"""


def rings(*edits):
    return {"rings": mutate("rings", *edits, exercise="exercise8")}


WRONG = {
    "the built-in all_gather": Wrong(
        rings((GATHER_START, "    return lax.all_gather(block, axis_name, tiled=True)\n" + GATHER_START)), devices="4",
        says=("ring_all_gather runs an all-gather over 'model'", "lax.ppermute"), never=("psum",)),
    "an all-gather ring of n steps": Wrong(
        rings((GATHER_LOOP, GATHER_LOOP.replace("range(1, n)", "range(1, n + 1)"))), devices="4",
        says=("ring_all_gather runs 4 ppermutes", "expected n - 1 = 3", "back to where it started"),
        fails=(("test_ring_all_gather_sends_n_minus_1_blocks", ("ring_all_gather runs 4 ppermutes",), {4}),)),
    "a reduce-scatter ring of n steps": Wrong(
        rings((SCATTER_LOOP, SCATTER_LOOP.replace("range(1, n)", "range(1, n + 1)"))), devices="4",
        says=("your program runs 2 collective-permutes over 'model'; the reference's runs 1",)),
    "the ring's length from jax.device_count()": Wrong(
        rings((GATHER_START, GATHER_START.replace("lax.axis_size(axis_name)", "jax.device_count()")),
              ("import jax.numpy as jnp\n", "import jax\nimport jax.numpy as jnp\n")), devices="4",
        says=("written for 4 devices", "the axis it runs over has fewer", "never from jax.device_count()")),
    "a reduce-scatter that starts from its own chunk": Wrong(
        rings(("total = chunks[(me - 1) % n]", "total = chunks[me]"),
              ("chunks[(me - step - 1) % n]", "chunks[(me - step) % n]")), devices="4",
        says=("ring_reduce_scatter", "holds the right 4 blocks of rows in the wrong order",
              "rows 0-1 hold what rows 2-3 should")),
    "blocks stored the wrong way round": Wrong(
        rings(("gathered.at[(me - step) % n]", "gathered.at[(me + step) % n]")), devices="4",
        says=("holds the right blocks in the wrong places", "device (me - s) mod n's")),
}

RIGHT = {
    "fori_loop rings": Right(rings(
        (GATHER_TAIL, "    def step(s, carry):\n"
                      "        gathered, passing = carry\n"
                      "        passing = _to_next(passing, axis_name, n)\n"
                      "        return gathered.at[(me - s) % n].set(passing), passing\n\n"
                      "    gathered = lax.fori_loop(1, n, step, (gathered, block))[0]\n"
                      "    return gathered.reshape"),
        (SCATTER_TAIL, "    def step(s, total):\n"
                       "        return _to_next(total, axis_name, n) + chunks[(me - s - 1) % n]\n\n"
                       "    return lax.fori_loop(1, n, step, chunks[(me - 1) % n])")), devices="1,4"),
    "blocks passed the other way round": Right(rings(
        ("perm=[(i, (i + 1) % n) for i in range(n)]", "perm=[(i, (i - 1) % n) for i in range(n)]"),
        ("gathered.at[(me - step) % n]", "gathered.at[(me + step) % n]"),
        ("total = chunks[(me - 1) % n]", "total = chunks[(me + 1) % n]"),
        ("chunks[(me - step - 1) % n]", "chunks[(me + step + 1) % n]")), devices="4"),
    # Half of every chunk travels each way: n - 1 ppermutes per direction, n - 1 chunks in all (round 12 found it
    # losing the reduce-scatter's point for its 2(n - 1) ppermutes).
    "a reduce-scatter that runs both ways at once": Right(rings(
        ("    chunks = x.reshape(n, x.shape[0] // n, *x.shape[1:])\n" + SCATTER_TAIL,
         "    chunks = x.reshape(n, x.shape[0] // n, -1)\n"
         "    a, b = chunks[:, :, :chunks.shape[2] // 2], chunks[:, :, chunks.shape[2] // 2:]\n"
         "    back = lambda v: lax.ppermute(v, axis_name, perm=[(i, (i - 1) % n) for i in range(n)])\n"
         "    ta, tb = a[(me - 1) % n], b[(me + 1) % n]\n"
         "    for step in range(1, n):\n"
         "        ta = _to_next(ta, axis_name, n) + a[(me - step - 1) % n]\n"
         "        tb = back(tb) + b[(me + step + 1) % n]\n"
         "    return jnp.concatenate([ta, tb], axis=-1).reshape(x.shape[0] // n, *x.shape[1:])")), devices="1,4,8"),
}

CATALOGUE = Catalogue(exercise="exercise8", task="rings", intact="layouts", wrong=WRONG, right=RIGHT)


@pytest.mark.parametrize("name", WRONG)
def test_wrong_rings_is_caught(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("name", RIGHT)
def test_other_right_rings_keeps_full_marks(name):
    CATALOGUE.expect_full_marks(name)
