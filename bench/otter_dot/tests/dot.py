"""The dot suite's six checks (bench/plain_dot.py) as an otter-grader test file (exception-based format).

otter-grader runs the student's script and hands each test case the script's globals by name; the
device count comes from JAX_NUM_CPU_DEVICES, which bench/otter_peer.py sets.
"""

import numpy as np
from otter.test_files import test_case

OK_FORMAT = False
name = "dot"
points = 6


def _vectors(rng, length, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, size=length).astype(dtype), rng.integers(-9, 10, size=length).astype(dtype)
    return rng.normal(size=length).astype(dtype), rng.normal(size=length).astype(dtype)


def _matches_numpy(length, dtype):
    """The value check of one length and dtype, as a test case: otter hands it the script's distributed_dot."""
    def check(distributed_dot):
        x, y = _vectors(np.random.default_rng(length), length, dtype)
        got = np.asarray(distributed_dot(x, y))
        assert got.shape == () and got.dtype == dtype
        np.testing.assert_allclose(got, np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-4)
    return test_case(name=f"length {length} {np.dtype(dtype)}", points=1)(check)


# otter collects the test cases it finds among the file's names
test_length_5 = _matches_numpy(5, np.float32)
test_length_37 = _matches_numpy(37, np.float32)
test_length_1 = _matches_numpy(1, np.float32)
test_length_3_int32 = _matches_numpy(3, np.int32)
test_length_1001 = _matches_numpy(1001, np.float32)


@test_case(points=1)
def test_one_all_reduce(distributed_dot):
    """The structural check's reads: its own length, then every length the value tests try."""
    import jax

    for length, dtype in [(405, np.float32), (5, np.float32), (37, np.float32), (1, np.float32), (3, np.int32),
                          (1001, np.float32)]:
        x, y = _vectors(np.random.default_rng(length), length, dtype)
        compiled = jax.jit(distributed_dot).lower(x, y).compile()
        np.testing.assert_allclose(compiled(x, y), np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-4)
        psums = [line for line in compiled.as_text().splitlines() if " all-reduce(" in line and "/psum" in line]
        assert len(psums) == 1
