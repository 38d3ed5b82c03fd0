"""Wrong submissions for the extra-credit task multihost: each loses its points, says why, keeps dot full."""

import pytest

from catalogue import expect_caught, mutate

WRONG = {
    "a ValueError that names no counts": (
        mutate("multihost", ('f"every process must hold the same number of rows; they hold {counts}"',
                             '"every process must hold the same number of rows"')),
        "its message does not name"),
    "no check of the row counts": (
        mutate("multihost", ("    if len(set(counts)) != 1:\n", "    if False:\n")),
        "returned a value, expected it to raise ValueError"),
    "each process's own mean": (
        mutate("multihost", ("    return mean(rows)\n", "    return local_batch.mean(axis=0)\n")),
        "is the mean of that process's own rows only"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_multihost_is_caught(make_submission, mistake):
    source, reason = WRONG[mistake]
    expect_caught(make_submission({"multihost": source}), "multihost", "dot", "2", reason)
