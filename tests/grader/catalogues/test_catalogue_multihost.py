"""Wrong submissions for the extra-credit task multihost: each loses its points, says why, keeps dot full."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

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
        "2", says=("is the mean of that process's own rows only", "(jax.devices(); jax.local_devices() are")),
    # Round 44 (written apart): the sum over every process divided by this process's rows; and (issue 30: both
    # uneven layouts once put the odd count on the first or the last process, now each in turn) only the first and
    # last processes' counts compared. Two mistakes of one function, each failing its own test, in one run.
    "the sum divided by one process's rows, only the first and last counts compared": Wrong(
        {"multihost": mutate("multihost", ("    return mean(rows)\n", "    return mean(rows) * jax.process_count()\n"),
                             ("    if len(set(counts)) != 1:\n", "    if counts[0] != counts[-1]:\n"))},
        "1", says=("is 4 times the answer (4 is the number of processes)", "divides the sum of every process's rows"),
        fails=(("test_global_mean_of_more_rows", ("is 4 times the answer (4 is the number of processes)",), {1}),
               ("test_uneven_rows_rejected_on_every_layout", (
                   "row counts [3, 1, 3, 3]", "returned a value, expected it to raise ValueError",
                   "It raised when process 0 held fewer rows, but not process 1: compare every process's count"),
                {1}))),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "only the processes that differ from process 0 raise": Wrong(
        apart("multihost", ("if len(set(counts)) > 1:", "if counts[jax.process_index()] != counts[0]:")), "2",
        says=("the processes disagree", "process 0 never finished")),
    # Round 44 (written apart): every process's rows read from the caller (the probe once held them all), the mean
    # taken with no communication; now a process receives only its own rows (grader.suite.PerProcess)
    "every process's rows read from the caller's memory": Wrong({"multihost": '''import gc
import sys

import jax.numpy as jnp
import numpy as np


def _everyones(local_batch):
    def all_rows(v):
        return (isinstance(v, (list, tuple)) and len(v) > 1 and any(b is local_batch for b in v)
                and all(getattr(b, "ndim", 0) == 2 for b in v))
    frame = sys._getframe(1)
    while frame is not None:
        found = next((v for v in frame.f_locals.values() if all_rows(v)), None)
        if found is not None:
            return list(found)
        frame = frame.f_back
    return next((list(v) for v in gc.get_objects() if all_rows(v)), [local_batch])


def global_mean(local_batch):
    batches = _everyones(local_batch)
    counts = [int(b.shape[0]) for b in batches]
    if len(set(counts)) != 1:
        raise ValueError(f"every process must hold the same number of rows; they hold {counts}")
    return jnp.asarray(np.concatenate(batches).mean(axis=0))
'''}, "2", says=("is the mean of that process's own rows only",)),
}


RIGHT = {
    "written apart: the mean of the processes' means, gathered": Right(apart(
        "multihost", ("""    mesh = Mesh(np.array(jax.devices()), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    arr = jax.make_array_from_process_local_data(sharding, local_batch)
    return jax.jit(lambda a: jnp.mean(a, axis=0), out_shardings=NamedSharding(mesh, P()))(arr)""",
                      """    means = multihost_utils.process_allgather(jnp.mean(jnp.asarray(local_batch), axis=0))
    return jnp.mean(jnp.asarray(means).reshape(-1, local_batch.shape[1]), axis=0)""")), "2"),
}


CATALOGUE = Catalogue("multihost", WRONG, RIGHT, intact="dot")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_multihost_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_multihost_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
