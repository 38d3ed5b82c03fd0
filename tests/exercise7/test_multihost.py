"""Suite for task multihost: global_mean(local_batch) over rows held by different processes.

Visible tests run as 2 processes x 2 devices; the hidden ones (course.yaml) run more rows, and every
layout, 4 processes x 1 device included.
"""

import numpy as np
import pytest

from grader.suite import PerProcess, expect_close, expect_raises, expect_shape

FEATURES = 5


def _check_mean(student, rng, devices, rows_per_device):
    batches = [rng.normal(size=(rows_per_device * devices, FEATURES)).astype(np.float32)
               for _ in range(student.processes)]
    expected = np.concatenate(batches).astype(np.float64).mean(axis=0)
    results = student.probe("multihost_probes.global_mean", PerProcess(tuple(batches)))
    for i, got in enumerate(results):
        what = f"global_mean on process {i} of {student.processes} ({rows_per_device * devices} rows each)"
        got = expect_shape(got, expected.shape, what)
        own = batches[i].astype(np.float64).mean(axis=0)
        if np.allclose(got, own, rtol=1e-4, atol=1e-5) and not np.allclose(own, expected, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{what} is the mean of that process's own rows only: every process must return "
                                 "the mean over the rows of all processes. One global array holds them: "
                                 "jax.make_array_from_process_local_data over a mesh of every process's devices "
                                 "(jax.devices(); jax.local_devices() are this process's only), its mean taken in "
                                 "jax.jit")
        if student.processes != devices and np.allclose(got, student.processes * expected, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{what} is {student.processes} times the answer ({student.processes} is the number "
                                 "of processes): the processes' parts were added up where they are averaged; the "
                                 "mean divides the sum of every process's rows by the count of all of them")
        expect_close(got, expected, what=what, rtol=1e-4, atol=1e-5, dtype=np.float32,
                     counts={"processes": student.processes, "devices per process": devices})


@pytest.mark.devices(2)
def test_global_mean_matches_numpy(student, rng, devices):
    _check_mean(student, rng, devices, 1)


def test_global_mean_of_more_rows(student, rng, devices):
    _check_mean(student, rng, devices, 3)


def _expect_uneven_rejected(student, rng, counts):
    batches = [rng.normal(size=(rows, FEATURES)).astype(np.float32) for rows in counts]
    expect_raises(lambda: student.probe("multihost_probes.global_mean", PerProcess(tuple(batches))), "ValueError",
                  f"global_mean with row counts {counts}", mentions=counts, facts=(FEATURES,),
                  why="gather every process's row count first, raise ValueError when they differ, and name them")


@pytest.mark.devices(2)
def test_uneven_rows_rejected(student, rng, devices):
    _expect_uneven_rejected(student, rng, [devices * (i + 1) for i in range(student.processes)])


def test_uneven_rows_rejected_on_every_layout(student, rng, devices):
    """One process holds fewer rows, in turn each of them (a check of the first and last process's counts
    alone misses the ones between): every process must notice, not only the one that differs."""
    for short in range(student.processes):
        counts = [devices * 3] * student.processes
        counts[short] = devices
        try:
            _expect_uneven_rejected(student, rng, counts)
        except AssertionError as missed:
            if not short:
                raise
            # measured: it raised when process 0 held fewer rows, not when this one did
            raise AssertionError(f"{missed}. It raised when process 0 held fewer rows, but not process {short}: "
                                 "compare every process's count, not only some of them") from None
