"""Wrong submissions for the extra-credit task ring_optimal: each loses its points, says why, keeps ring full."""

import pytest

from catalogue import Catalogue, Wrong, mutate

OPTIMAL = "def ring_allreduce_optimal(x, axis_name):\n"

WRONG = {
    "the simple ring, whole blocks n - 1 times": Wrong(
        {"ring": mutate("ring", (OPTIMAL, f"{OPTIMAL}    return ring_allreduce(x, axis_name)\n"))},
        "4", says=("Passing whole blocks costs (n - 1) blocks",)),
    "lax.psum under another name": Wrong(
        {"ring": mutate("ring", (OPTIMAL, f"{OPTIMAL}    return lax.psum(x, axis_name)\n"))},
        "4", says=("runs an all-reduce (from lax.psum)",)),
    "padding not cut off": Wrong(
        {"ring": mutate("ring", ("return chunks.reshape(-1)[:size].reshape(x.shape)", "return chunks.reshape(-1)"))},
        "4", says=("returned shape",)),
}


CATALOGUE = Catalogue("ring_optimal", WRONG, intact="ring")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_ring_optimal_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)
