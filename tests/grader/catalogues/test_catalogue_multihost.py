"""Wrong submissions for the extra-credit task multihost: each loses its points, says why, keeps dot full."""

import pytest

from catalogue import Catalogue, Wrong, mutate

WRONG = {
    "a ValueError that names no counts": Wrong(
        {"multihost": mutate("multihost", ('f"every process must hold the same number of rows; they hold {counts}"',
                             '"every process must hold the same number of rows"'))},
        "2", says=("its message does not name",)),
    "no check of the row counts": Wrong(
        {"multihost": mutate("multihost", ("    if len(set(counts)) != 1:\n", "    if False:\n"))},
        "2", says=("returned a value, expected it to raise ValueError",)),
    "each process's own mean": Wrong(
        {"multihost": mutate("multihost", ("    return mean(rows)\n", "    return local_batch.mean(axis=0)\n"))},
        "2", says=("is the mean of that process's own rows only",)),
}


CATALOGUE = Catalogue("multihost", WRONG, intact="dot")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_multihost_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)
