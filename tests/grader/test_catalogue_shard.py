"""Realistic wrong submissions for task shard: each loses points on shard only, with a reason that names it."""

import pytest

from catalogue import check_wrong_submission

# Each submission carries one mistake per function; each mistake is (test it fails, words its
# message must contain, device counts at which it shows up). n_devices = 3 is tried at every count.
SUBMISSIONS = {
    "rows dealt like cards, rows dropped": (
        """
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
        """,
        [("test_shard_batch", ("deals the rows out like cards",), {1, 2, 4}),
         ("test_pad_and_shard", ("round up: ceil(",), {1, 2, 4})]),
    "jax.device_count() for n_devices, padding counted, interleaved unshard": (
        """
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
        """,
        [("test_shard_batch", ("use the n_devices argument (3)",), {1, 2, 4}),
         ("test_pad_and_shard", ("the mask says every row is real", "padding"), {1, 2, 4}),
         ("test_unshard", ("interleaves the devices' rows",), {1, 2, 4})]),
    "assert for ValueError, padding in front, everything flattened": (
        """
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
        """,
        [("test_shard_batch_rejects_uneven_batch", ("raised AssertionError, expected ValueError",), {1, 2, 4}),
         ("test_pad_and_shard", ("puts the padding first",), {1, 2, 4}),
         ("test_unshard", ("unshard(x) with x of shape", "returned shape (", ", expected shape ("), {1, 2, 4})]),
}


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_wrong_shard_loses_points_on_shard_only(make_submission, name):
    source, mistakes = SUBMISSIONS[name]
    check_wrong_submission(make_submission, "shard", "devices", source, mistakes)
