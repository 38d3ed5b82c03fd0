"""The dot suite's checks as one plain process: the least work ``grade exercise7 --task dot`` could do.

The five value checks and the structural check of tests/exercise7/test_dot.py on the reference
``distributed_dot``, at ``PEER_DEVICES`` emulated devices (4 by default), in this process: JAX imported
once, no pytest, no worker, no sandbox, no second process. ``python bench/plain_dot.py`` runs them;
bench/peer_dot.py runs the same functions as a pytest file (the in-process peer), and ``bench/bench.py
--peer`` times both against ``grade``, interleaved.
"""

import os
import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_num_cpu_devices", int(os.environ.get("PEER_DEVICES", "4")))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "solutions" / "exercise7"))

from dot import distributed_dot  # noqa: E402 - after the device count is set

LENGTHS = [(5, np.float32), (37, np.float32), (1, np.float32), (3, np.int32), (1001, np.float32)]


def _vectors(rng, length, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, size=length).astype(dtype), rng.integers(-9, 10, size=length).astype(dtype)
    return rng.normal(size=length).astype(dtype), rng.normal(size=length).astype(dtype)


def matches_numpy(length, dtype):
    x, y = _vectors(np.random.default_rng(length), length, dtype)
    got = np.asarray(distributed_dot(x, y))
    assert got.shape == () and got.dtype == dtype
    np.testing.assert_allclose(got, np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-4)


def uses_one_all_reduce():
    """test_dot_uses_one_all_reduce's reads: its own length, then every length the value tests try."""
    for length, dtype in [(405, np.float32), *LENGTHS]:
        x, y = _vectors(np.random.default_rng(length), length, dtype)
        compiled = jax.jit(distributed_dot).lower(x, y).compile()
        np.testing.assert_allclose(compiled(x, y), np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-4)
        psums = [line for line in compiled.as_text().splitlines() if " all-reduce(" in line and "/psum" in line]
        assert len(psums) == 1  # the student's psum; XLA's partitioner adds one of its own to read out element 0


if __name__ == "__main__":
    for length, dtype in LENGTHS:
        matches_numpy(length, dtype)
    uses_one_all_reduce()
