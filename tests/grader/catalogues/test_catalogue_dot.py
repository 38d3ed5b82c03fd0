"""Wrong submissions for task dot: each loses points on dot, says why, and leaves ring at full points."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

PMAPPED = ('local = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), axis_name="i"), axis_name="i")\n'
           "    return local(_split(x, n), _split(y, n))[0]")

WRONG = {
    "hard-coded 4 devices": Wrong(
        {"dot": mutate("dot", ("n = jax.device_count()", "n = 4"))},
        "2,4", says=("jax.pmap got an input with leading axis 4, 2 rows per device, but it maps over 2 devices",)),
    "no padding, assumes divisibility": Wrong(
        {"dot": mutate("dot", ("pad = (-v.shape[0]) % n", "pad = 0"))},
        "2", says=("do not split into 2 equal parts (reshape to (2, -1)): pad with zeros",)),
    "gathers whole vectors": Wrong(
        {"dot": mutate("dot", ("lambda a, b: lax.psum(jnp.dot(a, b), axis_name=\"i\")",
                       "lambda a, b: jnp.vdot(lax.all_gather(a, \"i\"), lax.all_gather(b, \"i\"))"))},
        "2", says=("slices of the vectors onto every device",)),
    # Round 46 (written apart): the partial dot products gathered and added on every device, not the vectors
    "gathers the partial dot products": Wrong(
        {"dot": mutate("dot", ("lambda a, b: lax.psum(jnp.dot(a, b), axis_name=\"i\")",
                       "lambda a, b: jnp.sum(lax.all_gather(jnp.dot(a, b), \"i\"))"))},
        "2", says=("less than a slice of a vector", "partial results, added up on every device"),
        never=("slices of the vectors onto every device",)),
    "psum of the products, summed after": Wrong(
        {"dot": mutate("dot", ("lax.psum(jnp.dot(a, b), axis_name=\"i\")",
                               "jnp.sum(lax.psum(a * b, axis_name=\"i\"))"))},
        "2", says=("psum carries",)),
    "a Python loop of device_puts, no pmap": Wrong(
        {"dot": mutate("dot", (PMAPPED, "home = jax.devices()[0]\n"
                                "    parts = [jnp.dot(jax.device_put(a, d), jax.device_put(b, d))\n"
                                "             for a, b, d in zip(_split(x, n), _split(y, n), jax.devices())]\n"
                                "    return sum(jax.device_put(p, home) for p in parts)"))},
        "2", says=("distributed_dot: its program has no jax.pmap that its answer depends on",)),
    "pmean where psum was meant": Wrong(
        {"dot": mutate("dot", ('lax.psum(jnp.dot(a, b), axis_name="i")', 'lax.pmean(jnp.dot(a, b), axis_name="i")'))},
        "2", says=("is 1/2 of the answer on 2 devices",)),
    "padded with ones": Wrong(
        {"dot": mutate("dot", ("jnp.pad(v, (0, pad))", "jnp.pad(v, (0, pad), constant_values=1)"))},
        "2", says=("off by what padding with 1 ones adds to the dot product",)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "the remainder cut off instead of padded": Wrong(
        apart("dot", ("padded = -(-L // n) * n", "padded = L // n * n"),
              ("x = jnp.concatenate([x, jnp.zeros(padded - L, x.dtype)]).reshape(n, -1)",
               "x = x[:padded].reshape(n, -1)"),
              ("y = jnp.concatenate([y, jnp.zeros(padded - L, y.dtype)]).reshape(n, -1)",
               "y = y[:padded].reshape(n, -1)")),
        "2", says=("the dot product of the first 4 elements only", "pad both vectors with zeros"),
        never=("constant factor", "pmean", "psum where")),
    "the devices' totals added up": Wrong(
        apart("dot", ("return out[0]", "return jnp.sum(out)")), "2",
        says=("is 2 times the answer on 2 devices", "return out[0]"),
        # round 46: at length 1 padding with copies of the last element adds as much; with int32 one device's part
        # may be 0, and counting the other twice is every part twice: the factor is what the measurement shows
        never=("pmean was meant", "lax.pmean where", "copies of the last element", "contribution twice")),
    "int32 vectors padded with float zeros": Wrong(
        apart("dot", ("jnp.zeros(padded - L, x.dtype)", "jnp.zeros(padded - L)"),
              ("jnp.zeros(padded - L, y.dtype)", "jnp.zeros(padded - L)")), "2",
        fails=(("test_dot_other_lengths", ("dtype changed from int32 to float32", "zeros of x.dtype to pad with"), {2}),)),
}


RIGHT = {
    # round 27 (written apart): the reference wrapped in jax.lax.composite, whose body is a function of its own that
    # XLA inlines: read as a call of it
    "the pmap inside a jax.lax.composite": Right({"dot": mutate("dot", (
        "    return local(_split(x, n), _split(y, n))[0]",
        '    return lax.composite(lambda a, b: local(_split(a, n), _split(b, n))[0], name="course.dot")(x, y)'))},
        "2"),
    # round 24 (written apart): padding another way. jnp.resize then a mask of the real elements (XLA moves the
    # resized copy's slices: the inputs as they are, no arithmetic), and a mask built inside the pmap from the
    # device's id (index arithmetic on no input): neither is the task's work or communication
    "padding by resize and a mask, outside and inside the pmap": Right({"dot": """
        import jax
        import jax.numpy as jnp
        from jax import lax


        def _padded(v, n, per):
            keep = jnp.arange(n * per) < v.shape[0]
            return jnp.where(keep, jnp.resize(v, (n * per,)), jnp.zeros((), v.dtype)).reshape(n, per)


        def distributed_dot(x, y):
            x, y = jnp.asarray(x), jnp.asarray(y)
            n = jax.device_count()
            per = -(-x.shape[0] // n)

            def local(a, b):
                real = lax.axis_index("i") * per + jnp.arange(per) < x.shape[0]
                return lax.psum(jnp.dot(jnp.where(real, a, 0), b), "i")

            return jax.pmap(local, axis_name="i")(_padded(x, n, per), _padded(y, n, per))[0]
        """}, devices="2,4"),
    "padding by .at[].set": Right({"dot": """
        import jax
        import jax.numpy as jnp
        from jax import lax


        def distributed_dot(x, y):
            x, y = jnp.asarray(x), jnp.asarray(y)
            n = jax.device_count()
            per = -(-x.shape[0] // n)
            xs = jnp.zeros(n * per, x.dtype).at[: x.shape[0]].set(x).reshape(n, per)
            ys = jnp.zeros(n * per, y.dtype).at[: y.shape[0]].set(y).reshape(n, per)
            return jax.pmap(lambda a, b: lax.psum(jnp.vdot(a, b), "i"), axis_name="i")(xs, ys)[0]
        """}, devices="2"),
    "shard_map under jit on a mesh of its own": Right({"dot": """
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
        """}),
    # each device's slice padded to a multiple of 8 (round 47): on the value tests' 5 elements that is 8 a device
    # where the whole vector is 5, so the structural test counts work only from its own 405 elements on
    "each device's slice padded to a multiple of 8": Right({"dot": """
        import jax
        import jax.numpy as jnp
        from jax import lax


        def distributed_dot(x, y):
            n = jax.device_count()
            per = -(-(-(-x.shape[0] // n)) // 8) * 8
            xs, ys = (jnp.pad(v, (0, n * per - v.shape[0])).reshape(n, per) for v in (x, y))
            return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(xs, ys)[0]
        """}, "2,8"),
    "pmap with out_axes=None": Right({"dot": mutate("dot", ('axis_name="i")\n', 'axis_name="i", out_axes=None)\n'),
                                      ("local(_split(x, n), _split(y, n))[0]", "local(_split(x, n), _split(y, n))"))}),
}


CATALOGUE = Catalogue("dot", WRONG, RIGHT, intact="ring")


@pytest.mark.parametrize("mistake", WRONG)
def test_wrong_dot_is_caught(mistake):
    CATALOGUE.expect_caught(mistake)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_dot_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
