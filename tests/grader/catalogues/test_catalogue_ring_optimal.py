"""Wrong submissions for the extra-credit task ring_optimal: each loses its points, says why, keeps ring full."""

import pytest

from catalogue import expect_caught, mutate

OPTIMAL = "def ring_allreduce_optimal(x, axis_name):\n"

WRONG = {
    "the simple ring, whole blocks n - 1 times": (
        mutate("ring", (OPTIMAL, f"{OPTIMAL}    return ring_allreduce(x, axis_name)\n")),
        "Passing whole blocks costs (n - 1) blocks"),
    "lax.psum under another name": (
        mutate("ring", (OPTIMAL, f"{OPTIMAL}    return lax.psum(x, axis_name)\n")),
        "runs an all-reduce (from lax.psum)"),
    "padding not cut off": (
        mutate("ring", ("return chunks.reshape(-1)[:size].reshape(x.shape)", "return chunks.reshape(-1)")),
        "returned shape"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_ring_optimal_is_caught(make_submission, mistake):
    source, reason = WRONG[mistake]
    expect_caught(make_submission({"ring": source}), "ring_optimal", "ring", "4", reason)
