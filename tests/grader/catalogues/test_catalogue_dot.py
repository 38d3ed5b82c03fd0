"""Wrong submissions for task dot: each loses points on dot, says why, and leaves ring at full points."""

import pytest

from catalogue import expect_caught, expect_full_marks, mutate

PMAPPED = ('local = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), axis_name="i"), axis_name="i")\n'
           "    return local(_split(x, n), _split(y, n))[0]")

WRONG = {
    "hard-coded 4 devices": (
        mutate("dot", ("n = jax.device_count()", "n = 4")), "2,4",
        "jax.pmap got an input with leading axis 4, 2 rows per device, but it maps over 2 devices"),
    "no padding, assumes divisibility": (
        mutate("dot", ("pad = (-v.shape[0]) % n", "pad = 0")), "2",
        "do not split into 2 equal parts (reshape to (2, -1)): pad with zeros"),
    "gathers whole vectors": (
        mutate("dot", ("lambda a, b: lax.psum(jnp.dot(a, b), axis_name=\"i\")",
                       "lambda a, b: jnp.vdot(lax.all_gather(a, \"i\"), lax.all_gather(b, \"i\"))")),
        "2", "gathers whole vectors"),
    "psum of the products, summed after": (
        mutate("dot", ("lax.psum(jnp.dot(a, b), axis_name=\"i\")", "jnp.sum(lax.psum(a * b, axis_name=\"i\"))")),
        "2", "psum carries"),
    "a Python loop of device_puts, no pmap": (
        mutate("dot", (PMAPPED, "home = jax.devices()[0]\n"
                                "    parts = [jnp.dot(jax.device_put(a, d), jax.device_put(b, d))\n"
                                "             for a, b, d in zip(_split(x, n), _split(y, n), jax.devices())]\n"
                                "    return sum(jax.device_put(p, home) for p in parts)")),
        "2", "distributed_dot runs no all-reduce of its own"),
    "pmean where psum was meant": (
        mutate("dot", ('lax.psum(jnp.dot(a, b), axis_name="i")', 'lax.pmean(jnp.dot(a, b), axis_name="i")')),
        "2", "is 1/2 of the answer on 2 devices"),
    "padded with ones": (
        mutate("dot", ("jnp.pad(v, (0, pad))", "jnp.pad(v, (0, pad), constant_values=1)")),
        "2", "off by what padding with 1 ones adds to the dot product"),
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
