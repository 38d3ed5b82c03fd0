"""The peer of ``grade exercise7 --task dot``: the same checks as one plain, in-process pytest file.

What a student would otherwise run: pytest imports JAX in its own process and calls the reference
``distributed_dot`` directly, with no worker, no sandbox and no second process, at the lengths and
dtypes of the dot suite (tests/exercise7/test_dot.py) on ``PEER_DEVICES`` emulated devices (4 by
default), and compiles the structural case's program once to count its all-reduce. The checks are
bench/plain_dot.py's, which also runs them without pytest. bench/bench.py runs this file as its own
process, interleaved with ``grade``:

    python -m pytest -q -c /dev/null -p no:cacheprovider -p no:xdist bench/peer_dot.py
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plain_dot  # noqa: E402 - JAX imported, its device count set


@pytest.mark.parametrize("length, dtype", plain_dot.LENGTHS)
def test_dot_matches_numpy(length, dtype):
    plain_dot.matches_numpy(length, dtype)


def test_dot_uses_one_all_reduce():
    plain_dot.uses_one_all_reduce()
