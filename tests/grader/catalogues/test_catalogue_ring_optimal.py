"""Wrong submissions for the extra-credit task ring_optimal: each loses its points, says why, keeps ring full."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

OPTIMAL = "def ring_allreduce_optimal(x, axis_name):\n"

WRONG = {
    "the simple ring, whole blocks n - 1 times": Wrong(
        {"ring": mutate("ring", (OPTIMAL, f"{OPTIMAL}    return ring_allreduce(x, axis_name)\n"))},
        "4", says=("A step of yours sends the whole block (4004 bytes): pass one chunk",)),
    # Round 35 (written apart): one all-gather step too many; "passing whole blocks" was said of it.
    "one step too many, a chunk at each": Wrong(
        {"ring": mutate("ring", ("chunks = lax.fori_loop(0, n - 1, all_gather, chunks)",
                                 "chunks = lax.fori_loop(0, n, all_gather, chunks)"))},
        "4", says=("but they run 7 times, where the ring runs 2(n - 1) = 6",), never=("whole block",)),
    "lax.psum under another name": Wrong(
        {"ring": mutate("ring", (OPTIMAL, f"{OPTIMAL}    return lax.psum(x, axis_name)\n"))},
        "4", says=("runs an all-reduce (from lax.psum)",)),
    "a perm written out, not wrapped around the ring": Wrong(
        {"ring": mutate("ring", ("received = ring_shift(chunks[(me - step) % n], axis_name)",
                                 "received = lax.ppermute(chunks[(me - step) % n], axis_name, "
                                 "perm=[(i, i + 1) for i in range(n)])"))},
        "4", says=("ring_allreduce_optimal() raised IndexError", "not on the ring", "% n")),
    "padding not cut off": Wrong(
        {"ring": mutate("ring", ("return chunks.reshape(-1)[:size].reshape(x.shape)", "return chunks.reshape(-1)"))},
        "4", says=("returned shape",)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "int chunks turned float32": Wrong(
        apart("ring", ("chunks = jnp.pad(flat, (0, c * n - size)).reshape(n, c)",
                       "chunks = jnp.pad(flat, (0, c * n - size)).reshape(n, c).astype(jnp.float32)")), "4",
        says=("dtype changed from int32 to float32", "keep every chunk in the input's dtype")),
    "no all-gather after the reduce-scatter": Wrong(
        apart("ring", ("    for s in range(n - 1):\n        send = (i + 1 - s) % n",
                       "    for s in range(0):\n        send = (i + 1 - s) % n")), "4",
        says=("holds the complete sum in one chunk per device only", "the all-gather phase then copies"),
        never=("lax.psum", "constant factor")),
}


# Round 35 (written apart): the optimal ring both ways at once, each way on half the block, each half padded to n
# chunks of its own (on 8 devices 63 + 63 elements a step where a chunk of 1000 is 125).
BOTH_WAYS = """

def _one_way(flat, axis_name, s):
    n, me, size = lax.axis_size(axis_name), lax.axis_index(axis_name), flat.size
    c = -(-size // n)
    chunks = jnp.pad(flat, (0, n * c - size)).reshape(n, c)

    def reduce_scatter(step, c):
        return c.at[(me - s * (step + 1)) % n].add(ring_shift(c[(me - s * step) % n], axis_name, shift=s))

    def all_gather(step, c):
        return c.at[(me - s * step) % n].set(ring_shift(c[(me - s * (step - 1)) % n], axis_name, shift=s))

    chunks = lax.fori_loop(0, n - 1, reduce_scatter, chunks)
    return lax.fori_loop(0, n - 1, all_gather, chunks).reshape(-1)[:size]


def ring_allreduce_optimal(x, axis_name):
    flat = x.reshape(-1)
    half = (flat.size + 1) // 2
    return jnp.concatenate([_one_way(flat[:half], axis_name, 1), _one_way(flat[half:], axis_name, -1)]).reshape(x.shape)
"""

RIGHT = {
    "written apart: Python loops over the chunks": Right(apart("ring"), "4"),
    "both ways at once, each way on half the block": Right({"ring": mutate("ring") + BOTH_WAYS}, "4,8"),
}


CATALOGUE = Catalogue("ring_optimal", WRONG, RIGHT, intact="ring")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_ring_optimal_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_ring_optimal_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
