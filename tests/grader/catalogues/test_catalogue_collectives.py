"""Realistic wrong submissions for task collectives: each loses points on collectives only, with a reason that names it."""

import textwrap

import pytest

from apart import apart
from catalogue import Catalogue, Right, Wrong, mutate

HEADER = """
import jax
import jax.numpy as jnp
from jax import lax
"""

# Each submission carries one mistake per function; each mistake is (test it fails, words its
# message must contain, device counts at which it shows up). With one device, local and global
# statistics agree, so most of these mistakes show only from two devices on.
SUBMISSIONS = {
    # round 23 (written apart): standardize's variance added by a reduce-scatter of n copies (an all-reduce in
    # disguise), the one psum only handing on device 0's
    "the variance added by a reduce-scatter of copies": Wrong({"collectives": mutate(
        "collectives", ("    variance = lax.pmean(jnp.mean((row - mean) ** 2), AXIS)",
                        "    n = lax.axis_size(AXIS)\n"
                        "    variance = lax.psum_scatter(jnp.broadcast_to(jnp.mean((row - mean) ** 2), (n,)), AXIS, "
                        "scatter_dimension=0, tiled=True)[0] / n\n"
                        "    variance = lax.psum(jnp.where(lax.axis_index(AXIS) == 0, variance, 0.0), AXIS)"))},
        "4", says=("where the reference's runs no reduce-scatter",)),
    "local max, local standardisation": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def all_reduce_stats(x):
            stats = lambda r: (lax.psum(r, "i"), lax.pmean(r, "i"), jnp.maximum(r, r))
            return jax.pmap(stats, axis_name="i")(x)

        def standardize_across_devices(x):
            return jax.pmap(lambda r: (r - jnp.mean(r)) / jnp.std(r))(x)
        """)},
        fails=(("test_all_reduce_stats", ("device 1 holds its own local maximum", "jnp.max instead of lax.pmax"),
                {2, 4}),
               ("test_standardize_across_devices", ("its own local mean and variance", "lax.pmean"), {2, 4}))),
    "psum for the mean, averaged local variances": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def all_reduce_stats(x):
            stats = lambda r: (lax.psum(r, "i"), lax.psum(r, "i"), lax.pmax(r, "i"))
            return jax.pmap(stats, axis_name="i")(x)

        def _standardize(r):
            mean = lax.pmean(jnp.mean(r), "i")
            variance = lax.pmean(jnp.var(r), "i")
            return (r - mean) / jnp.sqrt(variance)

        def standardize_across_devices(x):
            return jax.pmap(_standardize, axis_name="i")(x)
        """)},
        fails=(("test_all_reduce_stats", ("the mean from", "lax.psum where lax.pmean was meant"), {2, 4}),
               ("test_standardize_across_devices", ("average of the devices' own variances",), {2, 4}))),
    # No list holds this mix (its own mean, the average of the rows' variances): the line through each row's
    # (x, result) gives both, measured.
    "each device's own mean, an averaged variance": Wrong(
        {"collectives": mutate("collectives", ("mean = lax.pmean(jnp.mean(row), AXIS)", "mean = jnp.mean(row)"))},
        fails=(("test_standardize_across_devices", ("each device subtracted its own row's mean and divided by the "
                                                    "square root of the devices' average variance",), {2, 4}),)),
    "hard-coded 4 devices, psum for the global mean": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def all_reduce_stats(x):
            stats = lambda r: (lax.psum(r, "i"), lax.psum(r, "i") / 4, lax.pmax(r, "i"))
            return jax.pmap(stats, axis_name="i")(x)

        def _standardize(r):
            mean = lax.psum(jnp.mean(r), "i")
            variance = lax.pmean(jnp.mean((r - mean) ** 2), "i")
            return (r - mean) / jnp.sqrt(variance)

        def standardize_across_devices(x):
            return jax.pmap(_standardize, axis_name="i")(x)
        """)},
        fails=(("test_all_reduce_stats", ("sum divided by 4, but there are", "do not hard-code"), {1, 2}),
               ("test_standardize_across_devices", ("lax.psum where lax.pmean was meant",), {2, 4}))),
    "all_gather instead of all-reduces, one device only": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def _stats(r):
            everything = lax.all_gather(r, "i")
            return everything.sum(0), everything.mean(0), everything.max(0)

        def all_reduce_stats(x):
            return jax.pmap(_stats, axis_name="i")(x)

        def standardize_across_devices(x):
            return (x - jnp.mean(x)) / jnp.std(x)
        """)},
        fails=(("test_communicates_with_all_reduce", ("all_reduce_stats gathers the whole array", "all-gather"),
          {2, 4}),
               ("test_communicates_with_all_reduce", ("standardize_across_devices(x): its program has no jax.pmap",),
                {2, 4}))),
    "an epsilon under the square root, pmean for the total": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def all_reduce_stats(x):
            stats = lambda r: (lax.pmean(r, "i"), lax.pmean(r, "i"), lax.pmax(r, "i"))
            return jax.pmap(stats, axis_name="i")(x)

        def _standardize(r):
            mean = lax.pmean(jnp.mean(r), "i")
            variance = lax.pmean(jnp.mean((r - mean) ** 2), "i")
            return (r - mean) / jnp.sqrt(variance + 1e-2)

        def standardize_across_devices(x):
            return jax.pmap(_standardize, axis_name="i")(x)
        """)},
        fails=(("test_all_reduce_stats", ("the total from", "lax.pmean where lax.psum was meant"), {2, 4}),
               ("test_standardize_across_devices", ("close to the answer but off by up to", "epsilon"), {1, 2, 4}))),
    # Round 15 (written apart): the sums psummed, the maximum taken on every device from the whole x with compares and
    # selects: since round 55 a comparison is arithmetic, so the whole maximum on every device is measured first.
    "the maximum by selects on the whole array": Wrong(
        {"collectives": HEADER + textwrap.dedent("""
        def _free_max(x):
            m = x[0]
            for i in range(1, x.shape[0]):
                m = jnp.where(x[i] > m, x[i], m)
            return jnp.broadcast_to(m, x.shape)

        def all_reduce_stats(x):
            x = jnp.asarray(x)
            s, mean = jax.pmap(lambda r: (lax.psum(r, "i"), lax.pmean(r, "i")), axis_name="i")(x)
            return s, mean, _free_max(x)

        def _standardize(r):
            mean = lax.pmean(jnp.mean(r), "i")
            return (r - mean) / jnp.sqrt(lax.pmean(jnp.mean((r - mean) ** 2), "i"))

        def standardize_across_devices(x):
            return jax.pmap(_standardize, axis_name="i")(x)
        """)},
        # the maximum's compares and selects are written outside the pmap: since the reference's own figure there
        # no longer counts its collectives' combining (round 63), that is what is told first
        devices="2", fails=(("test_communicates_with_all_reduce", ("writes outside its jax.pmap comes to 5",
                                                                   "the reference's program leaves 0"), {2}),)),
    # Issue 23: written from the statements alone (apart.py); each names its mistake and no wrong advice.
    "the statistics in another order, the mean of the devices' standard deviations": Wrong(
        apart("collectives", ('return lax.psum(row, "i"), lax.pmean(row, "i"), lax.pmax(row, "i")',
                              'return lax.psum(row, "i"), lax.pmax(row, "i"), lax.pmean(row, "i")'),
              ("return (row - mean) / jnp.sqrt(var)", 'return (row - mean) / lax.pmean(jnp.std(row), "i")')), "2",
        says=("the mean from all_reduce_stats(x)", "another order than (total, mean, maximum)"),
        never=("constant factor is wrong",),
        fails=(("test_standardize_across_devices", ("times the answer at every entry",
                                                    "the standard deviation it divides by"), {2}),)),
    "each device's own variance with ddof=1": Wrong(
        apart("collectives", ('var = lax.pmean(jnp.mean((row - mean) ** 2), "i")',
                              'var = lax.pmean(jnp.var(row, ddof=1), "i")')), "2",
        says=("standardize_across_devices(x) with x of shape (2, 9)",),
        fails=(("test_standardize_other_width", ("returned NaN", "one number per device"), {2}),)),
}


RIGHT = {
    # round 22 (written apart): the maximum as the negated minimum of the negated rows, the mean as the sum over n:
    # a sign flip is no arithmetic, so the work is the reference's
    "the maximum as -pmin(-x), the mean as psum / n": Right({"collectives": mutate(
        "collectives", ("return lax.psum(row, AXIS), lax.pmean(row, AXIS), lax.pmax(row, AXIS)",
                        "total = lax.psum(row, AXIS)\n    return total, total / lax.axis_size(AXIS), -lax.pmin(-row, AXIS)"))},
        devices="2,4"),
    "shard_map under jit, psum then divide by the axis size": Right({"collectives": HEADER + textwrap.dedent("""
        from jax.sharding import Mesh
        from jax.sharding import PartitionSpec as P


        def _over_devices(fn, outputs):
            mesh = Mesh(jax.devices(), ("d",))
            return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P("d"), out_specs=outputs))


        def _stats(r):
            return lax.psum(r, "d"), lax.psum(r, "d") / lax.axis_size("d"), lax.pmax(r, "d")


        def _standardize(r):
            mean = lax.psum(jnp.mean(r), "d") / lax.axis_size("d")
            variance = lax.psum(jnp.mean((r - mean) ** 2), "d") / lax.axis_size("d")
            return (r - mean) / jnp.sqrt(variance)


        def all_reduce_stats(x):
            return _over_devices(_stats, (P("d"),) * 3)(x)


        def standardize_across_devices(x):
            return _over_devices(_standardize, P("d"))(x)
        """)}),
    # round 63 (written apart): the mean as a psum of the rows divided by n first; the all-reduce's own adds are not
    # arithmetic written outside the pmap (grader.suite.work.outside_per_device)
    "the mean as the psum of the rows divided by n": Right({"collectives": mutate(
        "collectives", ("return lax.psum(row, AXIS), lax.pmean(row, AXIS), lax.pmax(row, AXIS)",
                        "return lax.psum(row, AXIS), lax.psum(row / lax.axis_size(AXIS), AXIS), lax.pmax(row, AXIS)"))},
        devices="2,4"),
    "written apart: the variance as the pmean of squares minus the squared mean": Right(apart(
        "collectives", ('var = lax.pmean(jnp.mean((row - mean) ** 2), "i")',
                        'var = lax.pmean(jnp.mean(row ** 2), "i") - mean ** 2')), "2"),
}


CATALOGUE = Catalogue("collectives", SUBMISSIONS, RIGHT, intact="devices")


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_wrong_collectives_loses_points_on_collectives_only(name):
    CATALOGUE.expect_caught(name)


@pytest.mark.parametrize("way", RIGHT)
def test_other_right_collectives_keeps_full_marks(way):
    CATALOGUE.expect_full_marks(way)
