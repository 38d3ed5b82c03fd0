"""Hidden suite for task multihost: global_mean(local_batch) over rows held by different processes."""

import numpy as np
import pytest

from grader.suite import StudentFailure, expect_close

FEATURES = 5


@pytest.mark.parametrize("rows_per_device", [1, 3])
def test_global_mean_matches_numpy(student, rng, devices, rows_per_device):
    batches = [rng.normal(size=(rows_per_device * devices, FEATURES)).astype(np.float32)
               for _ in range(student.processes)]
    expected = np.concatenate(batches).astype(np.float64).mean(axis=0)
    results = student.probe("multihost_probes.global_mean", batches)
    for i, got in enumerate(results):
        expect_close(got, expected, what=f"global_mean on process {i} of {student.processes} "
                                         f"({rows_per_device * devices} rows each)", rtol=1e-4, atol=1e-5)


def test_uneven_rows_rejected(student, rng, devices):
    batches = [rng.normal(size=(devices * (i + 1), FEATURES)).astype(np.float32) for i in range(student.processes)]
    counts = [len(b) for b in batches]
    try:
        student.probe("multihost_probes.global_mean", batches)
    except StudentFailure as failure:
        if failure.kind != "raised":
            raise
        assert failure.exc_type == "ValueError", (
            f"global_mean with row counts {counts} raised {failure.exc_type}, expected ValueError: {failure.message}")
        return
    raise AssertionError(f"global_mean accepted processes holding different row counts {counts}; gather every "
                         "process's count first and raise ValueError when they differ")
