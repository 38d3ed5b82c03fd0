"""The peer of ``grade exercise7 --task dot``: the same checks as one plain, in-process pytest file.

What a student would otherwise run: pytest imports JAX in its own process and calls the reference
``distributed_dot`` directly, with no worker, no sandbox and no second process, at the lengths and
dtypes of the dot suite (tests/exercise7/test_dot.py) on ``PEER_DEVICES`` emulated devices (4 by
default), and compiles the structural case's program once to count its all-reduce. bench/bench.py
runs it as its own process, interleaved with ``grade``:

    python -m pytest -q -c /dev/null -p no:cacheprovider -p no:xdist bench/peer_dot.py
"""

import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

jax.config.update("jax_num_cpu_devices", int(os.environ.get("PEER_DEVICES", "4")))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "solutions" / "exercise7"))

from dot import distributed_dot  # noqa: E402 - after the device count is set


def _vectors(rng, length, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-9, 10, size=length).astype(dtype), rng.integers(-9, 10, size=length).astype(dtype)
    return rng.normal(size=length).astype(dtype), rng.normal(size=length).astype(dtype)


@pytest.mark.parametrize("length, dtype", [(5, np.float32), (37, np.float32), (1, np.float32), (3, np.int32),
                                           (1001, np.float32)])
def test_dot_matches_numpy(length, dtype):
    x, y = _vectors(np.random.default_rng(length), length, dtype)
    got = np.asarray(distributed_dot(x, y))
    assert got.shape == () and got.dtype == dtype
    np.testing.assert_allclose(got, np.dot(x.astype(np.float64), y), rtol=1e-4, atol=1e-4)


def test_dot_uses_one_all_reduce():
    x = np.random.default_rng(45).normal(size=45).astype(np.float32)
    compiled = jax.jit(distributed_dot).lower(x, x).compile()
    np.testing.assert_allclose(compiled(x, x), np.dot(x.astype(np.float64), x), rtol=1e-4, atol=1e-4)
    psums = [line for line in compiled.as_text().splitlines() if " all-reduce(" in line and "/psum" in line]
    assert len(psums) == 1  # the student's psum; XLA's partitioner adds one of its own to read out element 0
