"""Realistic wrong submissions for task basics: each loses points on basics only, with a reason that names it."""

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, edited
from conftest import task

# Computed on one device, its result then spread over every device (and the same left where it was computed).
SPREAD = """
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P

        def _check(name, a):
            if a.shape[0] != jax.device_count():
                raise ValueError(f"{name} has leading axis {a.shape[0]}, but there are {jax.device_count()} devices")

        def _spread(rows):
            mesh = jax.make_mesh((jax.device_count(),), ("d",))
            return jax.device_put(rows, NamedSharding(mesh, P("d")))

        def square_plus_one(x):
            _check("x", x)
            return jax.pmap(lambda a: a**2 + 1)(x)

        def per_device_sum(x):
            _check("x", x)
            return _spread(jnp.stack([jnp.sum(x[d]) for d in range(len(x))]))

        def per_device_matmul(X, Y):
            _check("X", X)
            _check("Y", Y)
            return jax.pmap(jnp.matmul)(X, Y)
        """

# Each submission carries one mistake per function; each mistake is (test it fails, words its
# message must contain, the first of them naming the function, device counts at which it shows up).
SUBMISSIONS = {
    "vmap for pmap, psum in a per-device sum, only X checked": Wrong(
        {"basics": """
        import jax
        import jax.numpy as jnp
        from jax import lax

        def _check(name, a):
            if a.shape[0] != jax.device_count():
                raise ValueError(f"{name} has leading axis {a.shape[0]}, not {jax.device_count()}")

        def square_plus_one(x):
            _check("x", x)
            return jax.vmap(lambda a: a**2 + 1)(x)

        def per_device_sum(x):
            _check("x", x)
            return jax.pmap(lambda a: lax.psum(jnp.sum(a), "i"), axis_name="i")(x)

        def per_device_matmul(X, Y):
            _check("X", X)
            return jax.pmap(jnp.matmul)(X, Y)
        """},
        fails=(("test_results_live_on_every_device", ("square_plus_one's result lives on 1 device",
                                                "jax.vmap (one device) instead of jax.pmap"), {2, 4}),
               ("test_per_device_sum", ("per_device_sum", "every device holds the sum over all devices"), {2, 4}),
               ("test_rejects_other_leading_axes", ("per_device_matmul with X (", "and Y ("), {1, 2, 4}))),
    "hard-coded 4 devices, no check, a check that names nothing": Wrong(
        {"basics": """
        import jax
        import jax.numpy as jnp

        def square_plus_one(x):
            if x.shape[0] != 4:
                raise ValueError(f"x has leading axis {x.shape[0]}, but there are 4 devices")
            return jax.pmap(lambda a: a**2 + 1)(x)

        def per_device_sum(x):
            return jax.pmap(jnp.sum)(x)

        def per_device_matmul(X, Y):
            if X.shape[0] != jax.device_count() or Y.shape[0] != jax.device_count():
                raise ValueError("the leading axis must equal the number of devices")
            return jax.pmap(jnp.matmul)(X, Y)
        """},
        fails=(("test_square_plus_one", ("square_plus_one() raised ValueError", "there are 4 devices"), {1, 2}),
               ("test_rejects_wrong_leading_axis", ("per_device_sum with x (", "ValueError"), {1, 2, 4}),
               ("test_rejects_wrong_leading_axis", ("per_device_matmul with X (", "does not name"), {1, 2, 4}))),
    "a Python loop of device_puts, no pmap": Wrong(
        {"basics": """
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        def _check(name, a):
            if a.shape[0] != jax.device_count():
                raise ValueError(f"{name} has leading axis {a.shape[0]}, but there are {jax.device_count()} devices")

        def _stacked(blocks):
            devices = jax.devices()
            rows = [jax.device_put(b, d) for b, d in zip(blocks, devices)]
            sharding = NamedSharding(Mesh(np.array(devices), ("d",)), P("d"))
            return jax.make_array_from_single_device_arrays((len(rows), *rows[0].shape[1:]), sharding, rows)

        def square_plus_one(x):
            _check("x", x)
            return _stacked([x[d:d + 1] ** 2 + 1 for d in range(len(x))])

        def per_device_sum(x):
            _check("x", x)
            return jax.pmap(jnp.sum)(x)

        def per_device_matmul(X, Y):
            _check("X", X)
            _check("Y", Y)
            return jax.pmap(jnp.matmul)(X, Y)
        """},
        fails=(("test_each_function_runs_a_pmap", ("square_plus_one cannot be compiled with jax.jit",
                                                   "keep to jax.numpy"), {2, 4}),)),
    "computed on one device, spread with device_put": Wrong(
        {"basics": SPREAD},
        fails=(("test_each_function_runs_a_pmap", ("per_device_sum: its program has no jax.pmap that its answer depends on",),
                {2, 4}),)),
    # Round 35 (written apart): the same as the entry above, the sums returned where they were computed. Where a
    # result lives is feedback only (course.yaml: weight 0), so the device_put above earns nothing over this.
    "computed on one device, returned there": Wrong(
        {"basics": edited(SPREAD, ("return _spread(jnp.stack(", "return (jnp.stack("))},
        fails=(("test_results_live_on_every_device", ("per_device_sum's result lives on 1 device",), {2, 4}),
               ("test_each_function_runs_a_pmap", ("per_device_sum: its program has no jax.pmap",), {2, 4}))),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "int32 squared with a float exponent, a check for too many rows only": Wrong(
        apart("basics", ("b ** 2 + 1)", "b ** 2.0 + 1.0)"), ("if a.shape[0] != n:", "if a.shape[0] > n:")), "2",
        says=("square_plus_one(x) with x of shape (2, 3, 5): dtype changed from int32 to float32", "float literal"),
        fails=(("test_rejects_other_leading_axes", ("with x (1, 6) on 2 devices returned a value",), {2}),)),
}


RIGHT = {
    "pmaps built at each call, a shared check on len(), jnp.asarray first": Right({"basics": """
        import jax
        import jax.numpy as jnp

        def _fits(**arrays):
            n = jax.device_count()
            for name, a in arrays.items():
                if len(a) != n:
                    raise ValueError(f"{name} has {len(a)} rows but there are {n} devices; use ({n}, ...)")

        def square_plus_one(x):
            x = jnp.asarray(x)
            _fits(x=x)
            return jax.pmap(lambda a: jnp.square(a) + 1)(x)

        def per_device_sum(x):
            _fits(x=x)
            return jax.pmap(lambda a: a.sum())(x)

        def per_device_matmul(X, Y):
            _fits(X=X, Y=Y)
            return jax.pmap(lambda a, b: a @ b)(X, Y)
        """}),
}


CATALOGUE = Catalogue("basics", SUBMISSIONS, RIGHT, intact="devices")


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_wrong_basics_loses_points_on_basics_only(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_basics_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)


def test_a_result_spread_by_device_put_earns_nothing_over_one_left_on_one_device():
    """Round 35: where a result lives earns no point of its own; the pmap that computes each row does."""
    spread = task(CATALOGUE.report("computed on one device, spread with device_put"), "basics")
    kept = task(CATALOGUE.report("computed on one device, returned there"), "basics")
    assert spread["score"] == kept["score"] < spread["max_score"]
