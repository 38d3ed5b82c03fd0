"""Realistic wrong submissions for task shard: each loses points on shard only, with a reason that names it."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

# Each submission carries one mistake per function; each mistake is (test it fails, words its
# message must contain, device counts at which it shows up). n_devices = 3 is tried at every count.
SUBMISSIONS = {
    "rows dealt like cards, rows dropped": Wrong(
        {"shard": """
        import jax.numpy as jnp

        def shard_batch(x, n_devices):
            if x.shape[0] % n_devices:
                raise ValueError(f"{x.shape[0]} rows do not split over {n_devices} devices")
            return jnp.swapaxes(x.reshape(x.shape[0] // n_devices, n_devices, *x.shape[1:]), 0, 1)

        def pad_and_shard(x, n_devices):
            per = x.shape[0] // n_devices
            kept = x[: per * n_devices]
            mask = jnp.ones((n_devices, per), bool)
            return kept.reshape(n_devices, per, *x.shape[1:]), mask

        def unshard(x):
            return x.reshape(-1, *x.shape[2:])
        """},
        fails=(("test_shard_batch", ("deals the rows out like cards",), {1, 2, 4}),
               ("test_pad_and_shard", ("round up: ceil(",), {1, 2, 4}))),
    "jax.device_count() for n_devices, padding counted, interleaved unshard": Wrong(
        {"shard": """
        import jax
        import jax.numpy as jnp

        def shard_batch(x, n_devices):
            n = jax.device_count()
            if x.shape[0] % n:
                raise ValueError(f"{x.shape[0]} rows do not split over {n} devices")
            return x.reshape(n, -1, *x.shape[1:])

        def pad_and_shard(x, n_devices):
            pad = -x.shape[0] % n_devices
            padded = jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
            sharded = padded.reshape(n_devices, -1, *x.shape[1:])
            return sharded, jnp.ones(sharded.shape[:2], bool)

        def unshard(x):
            return jnp.swapaxes(x, 0, 1).reshape(-1, *x.shape[2:])
        """},
        fails=(("test_shard_batch", ("use the n_devices argument (3)",), {1, 2, 4}),
               ("test_pad_and_shard", ("the mask says every row is real", "padding"), {1, 2, 4}),
               ("test_unshard", ("interleaves the devices' rows",), {1, 2, 4}))),
    "assert for ValueError, padding in front, everything flattened": Wrong(
        {"shard": """
        import jax.numpy as jnp

        def shard_batch(x, n_devices):
            assert x.shape[0] % n_devices == 0, "the batch must divide evenly"
            return jnp.reshape(x, (n_devices, -1, *x.shape[1:]))

        def pad_and_shard(x, n_devices):
            pad = -x.shape[0] % n_devices
            padded = jnp.pad(x, [(pad, 0)] + [(0, 0)] * (x.ndim - 1))
            mask = jnp.arange(padded.shape[0]) >= pad
            return padded.reshape(n_devices, -1, *x.shape[1:]), mask.reshape(n_devices, -1)

        def unshard(x):
            return jnp.ravel(x)
        """},
        fails=(("test_shard_batch_rejects_uneven_batch", ("raised AssertionError at shard.py:", "expected ValueError"),
                {1, 2, 4}),
               ("test_pad_and_shard", ("puts the padding first",), {1, 2, 4}),
               ("test_unshard", ("unshard(x) with x of shape", "returned shape (", ", expected shape ("), {1, 2, 4}))),
    "mask and unshard judge rows by their values": Wrong(
        {"shard": """
        import jax.numpy as jnp

        def _nonzero(rows):
            return jnp.any(rows.reshape(rows.shape[0], -1) != 0, axis=1)

        def shard_batch(x, n_devices):
            if x.shape[0] % n_devices:
                raise ValueError(f"{x.shape[0]} rows do not split over {n_devices} devices")
            return jnp.reshape(x, (n_devices, -1, *x.shape[1:]))

        def pad_and_shard(x, n_devices):
            pad = -x.shape[0] % n_devices
            padded = jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1))
            return shard_batch(padded, n_devices), shard_batch(_nonzero(padded), n_devices)

        def unshard(x):
            flat = x.reshape(-1, *x.shape[2:])
            return flat[_nonzero(flat)]
        """},
        fails=(("test_pad_and_shard_edges", ("is padding, but it is a real row", "all zeros", "by position"),
                {1, 2, 4}),
               ("test_unshard_keeps_every_row", ("drops the rows", "a real row can be all zeros"), {1, 2, 4}),
               ("test_round_trip", ("unshard(sharded) has", "unshard keeps every row"), {2, 4}))),
    "int batches turned float": Wrong(
        {"shard": """
        import jax.numpy as jnp

        def shard_batch(x, n_devices):
            if x.shape[0] % n_devices:
                raise ValueError(f"{x.shape[0]} rows do not split over {n_devices} devices")
            return jnp.asarray(x, jnp.float32).reshape(n_devices, -1, *x.shape[1:])

        def pad_and_shard(x, n_devices):
            x = jnp.asarray(x)
            pad = -x.shape[0] % n_devices
            padded = jnp.concatenate([x, jnp.zeros((pad, *x.shape[1:]))])
            mask = jnp.arange(padded.shape[0]) < x.shape[0]
            return padded.reshape(n_devices, -1, *x.shape[1:]), mask.reshape(n_devices, -1)

        def unshard(x):
            return jnp.reshape(x, (-1, *x.shape[2:]))
        """},
        fails=(("test_shard_batch", ("returned dtype float32 for a batch of dtype int32", "keep x's dtype"), {1, 2, 4}),
               ("test_pad_and_shard", ("returned dtype float32 for a batch of dtype int32", "pad with zeros of x.dtype"),
          {1, 2, 4}),
               ("test_pad_and_shard_edges", ("returned dtype float32 for a batch of dtype",), {1, 2, 4}))),
    "unshard strips the trailing zero rows": Wrong(
        {"shard": mutate("shard", ("    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])",
                         "    flat = x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])\n"
                         "    filled = jnp.any(flat.reshape(flat.shape[0], -1) != 0, axis=1)\n"
                         "    return flat[: int(jnp.max(jnp.where(filled, jnp.arange(flat.shape[0]), -1))) + 1]"))},
        fails=(("test_unshard_keeps_every_row", ("unshard(x) with x of shape", "expected n_devices * per",
                                           "padding included"), {1, 2, 4}),
               ("test_round_trip_with_rows_of_zeros", ("unshard(sharded) has",), {1, 2, 4}))),
    # Round 49 (written apart): padded at the end, then dealt out like cards by pad_and_shard's shard_batch; on bools
    # (few distinct rows) the dealt order once read as "the padding first" (at 1 device, 5 bool rows dealt over 3
    # can even come out right: there the edges pass).
    "padded, then dealt out like cards": Wrong(
        {"shard": mutate("shard", ("    return x.reshape(n_devices, x.shape[0] // n_devices, *x.shape[1:])",
                                   "    return jnp.swapaxes(x.reshape(x.shape[0] // n_devices, n_devices, "
                                   "*x.shape[1:]), 0, 1)"))},
        fails=(("test_shard_batch", ("deals the rows out like cards",), {1, 2, 4}),
               ("test_pad_and_shard", ("deals the rows out like cards",), {1, 2, 4}),
               ("test_pad_and_shard_edges", ("deals the rows out like cards",), {2, 4}))),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "no ValueError of its own, rows per device rounded down to a negative pad width": Wrong(
        apart("shard", ("per = -(-B // n_devices)", "per = B // n_devices"),
              ('    if B % n_devices:\n        raise ValueError(f"batch of {B} rows does not split over {n_devices} '
               'devices; use pad_and_shard")\n', "")), "2",
        says=("raised ValueError inside JAX at shard.py:", "not from a check of your own"),
        fails=(("test_pad_and_shard", ("pad_and_shard() raised ValueError at `padded = jnp.pad(", "negative pad width"),
                {2}),)),
}


RIGHT = {
    "NumPy throughout, padding from zeros of x's dtype": Right({"shard": """
        import numpy as np

        def shard_batch(x, n_devices):
            x = np.asarray(x)
            if len(x) % n_devices:
                raise ValueError(f"{len(x)} rows do not split over {n_devices} devices: use pad_and_shard")
            return x.reshape(n_devices, -1, *x.shape[1:])

        def pad_and_shard(x, n_devices):
            x = np.asarray(x)
            per = -(-len(x) // n_devices)
            padded = np.concatenate([x, np.zeros((n_devices * per - len(x), *x.shape[1:]), x.dtype)])
            mask = np.arange(n_devices * per).reshape(n_devices, per) < len(x)
            return shard_batch(padded, n_devices), mask

        def unshard(x):
            return np.concatenate(list(np.asarray(x)))
        """}),
}


CATALOGUE = Catalogue("shard", SUBMISSIONS, RIGHT, intact="devices")


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_wrong_shard_loses_points_on_shard_only(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_shard_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
