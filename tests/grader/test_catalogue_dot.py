"""Wrong submissions for task dot: each loses points on dot, says why, and leaves ring at full points."""

import pytest

from catalogue import expect_caught, expect_full_marks, mutate

WRONG = {
    "hard-coded 4 devices": (
        mutate("dot", ("n = jax.device_count()", "n = 4")), "2,4",
        "the leading axis you give jax.pmap must be the device count (2 here)"),
    "no padding, assumes divisibility": (
        mutate("dot", ("pad = (-v.shape[0]) % n", "pad = 0")), "2", "pad x and y with zeros"),
    "gathers whole vectors": (
        mutate("dot", ("lambda a, b: lax.psum(jnp.dot(a, b), axis_name=\"i\")",
                       "lambda a, b: jnp.vdot(lax.all_gather(a, \"i\"), lax.all_gather(b, \"i\"))")),
        "2", "gathers whole vectors"),
    "psum of the products, summed after": (
        mutate("dot", ("lax.psum(jnp.dot(a, b), axis_name=\"i\")", "jnp.sum(lax.psum(a * b, axis_name=\"i\"))")),
        "2", "psum carries"),
}


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_dot_is_caught(make_submission, mistake):
    source, devices, reason = WRONG[mistake]
    expect_caught(make_submission({"dot": source}), "dot", "ring", devices, reason)


RIGHT = {
    "shard_map under jit on a mesh of its own": """
        import jax
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import Mesh
        from jax.sharding import PartitionSpec as P


        def distributed_dot(x, y):
            n = jax.device_count()
            pad = (-x.shape[0]) % n
            mesh = Mesh(jax.devices(), ("i",))
            local = jax.shard_map(lambda a, b: lax.psum(jnp.dot(a, b), "i"), mesh=mesh, in_specs=(P("i"), P("i")),
                                  out_specs=P())
            return jax.jit(local)(jnp.pad(x, (0, pad)), jnp.pad(y, (0, pad)))
        """,
    "pmap with out_axes=None": mutate("dot", ('axis_name="i")\n', 'axis_name="i", out_axes=None)\n'),
                                      ("local(_split(x, n), _split(y, n))[0]", "local(_split(x, n), _split(y, n))")),
}


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_dot_keeps_full_marks(make_submission, way):
    expect_full_marks(make_submission({"dot": RIGHT[way]}), "dot", "1,4")
