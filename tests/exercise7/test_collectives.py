"""Suite for task collectives: psum / pmean / pmax give every device the same global answer.

Visible tests run one width at 1, 2 and 4 devices; the hidden ones (course.yaml) try other widths at
every count (one number per device among them), and read the compiled programs for all-reduces and no
all-gather. A wrong value says which mistake it is when it equals a known wrong answer; otherwise its
facts, with what they mean in this task.
"""

import numpy as np
import pytest

from grader.suite import as_array, expect_close, expect_sequence, expect_shape, feedback, hlo, structure, work
from grader.suite.bypass import Asks
from grader.suite.differences import Probe

RTOL, ATOL = 1e-4, 1e-4
PRIMITIVE = {"total": "psum", "mean": "pmean", "maximum": "pmax"}
LOCAL = {"total": "jnp.sum", "mean": "jnp.mean", "maximum": "jnp.max"}


def _per_device_data(rng, n, width):
    """Rows with different scales and offsets, so a device's own statistics differ from the global ones."""
    scale = rng.uniform(0.5, 3.0, size=(n, 1))
    offset = rng.normal(0.0, 3.0, size=(n, 1))
    return (rng.normal(size=(n, width)) * scale + offset).astype(np.float32)


def _close(a, b) -> bool:
    return a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=ATOL)


def _expect_global(got, expected, what, alternatives, causes, probe):
    """``got`` must equal ``expected``; if it equals a known wrong answer instead, say which mistake that is;
    ``causes``: what a pattern of its values (grader.suite.value_patterns) means here; ``probe``: the reference
    as a function and the student's function again, for what a change of one part of x reaches."""
    if _close(got, expected):
        return
    for wrong, mistake in alternatives:
        if _close(got, wrong):
            raise AssertionError(f"{what}: {mistake}")
    expect_close(got, expected, what=what, rtol=RTOL, atol=ATOL, dtype=np.float32, devices=len(got), device_axis=True,
                 causes=causes, probe=probe)


def _stat_mistakes(name, x, ref):
    """Known wrong answers for one statistic of all_reduce_stats, each with what it means."""
    n = len(x)
    prim = PRIMITIVE[name]
    out = [(value, f"it equals the {other} over the devices: lax.{PRIMITIVE[other]} where lax.{prim} was meant, or the "
                   "results returned in another order than (total, mean, maximum)")
           for other, value in ref.items() if other != name]
    if name == "mean":
        out += [(ref["total"] / c, f"it is the sum divided by {c}, but there are {n} devices: do not hard-code "
                                   "the device count, lax.pmean divides by the right one")
                for c in (2, 4, 8) if c != n]
    return out


def _check_all_reduce_stats(student, rng, devices, width):
    x = _per_device_data(rng, devices, width)
    x64 = x.astype(np.float64)
    ones = np.ones((devices, 1))
    ref = {"total": ones * x64.sum(0), "mean": ones * x64.mean(0), "maximum": ones * x64.max(0)}
    got = expect_sequence(student.call("collectives.all_reduce_stats", x), 3,
                          "all_reduce_stats(x) (total, mean, maximum)")
    for k, ((name, expected), value) in enumerate(zip(ref.items(), got)):
        what = f"the {name} from all_reduce_stats(x) with x of shape {x.shape}"
        value = as_array(value, what)
        if value.shape == (devices,):
            raise AssertionError(f"{what} has shape {value.shape}, expected {x.shape}: one number per device is "
                                 f"each device's {LOCAL[name]} of its own row; reduce each column across devices "
                                 f"with lax.{PRIMITIVE[name]}")
        value = expect_shape(value, x.shape, what)
        for d in range(1, devices):
            if not _close(value[d], value[0]) and _close(value[d], x64[d]):
                raise AssertionError(f"every device should hold the same {name}; device {d} holds its own local "
                                     f"{name}: did you use {LOCAL[name]} instead of lax.{PRIMITIVE[name]}?")
        probe = Probe(reference=lambda v, k=k: _reference("all_reduce_stats")(v)[k], inputs=(x,), names=("x",),
                      rerun=lambda v, k=k: student.call("collectives.all_reduce_stats", v)[k])
        _expect_global(value, expected, what, _stat_mistakes(name, x64, ref),
                       {"disagree": f"an all-reduce, lax.{PRIMITIVE[name]}(v, 'i'), hands every device the same "
                                    f"{name}"}, probe)


# The widths of x the value tests try, at 1, 2 and 4 devices and at every count (standardize's from 2 devices on):
# the structural test reads each function's program at each of them too (MEASURED first), so a program honest
# only where it is read earns nothing there.
VISIBLE_COUNTS, MEASURED = (1, 2, 4), 5  # as the markers say (a marker stays literal: test_course.py reads it)
WIDTHS = {"all_reduce_stats": (7, (3, 1)), "standardize_across_devices": (9, (1, 2))}


@pytest.mark.devices(1, 2, 4)
def test_all_reduce_stats(student, rng, devices):
    _check_all_reduce_stats(student, rng, devices, WIDTHS["all_reduce_stats"][0])


@pytest.mark.parametrize("width", WIDTHS["all_reduce_stats"][1])
def test_all_reduce_stats_other_widths(student, rng, devices, width):
    _check_all_reduce_stats(student, rng, devices, width)


def _standardized(x, mean, variance):
    with np.errstate(divide="ignore", invalid="ignore"):  # a known wrong answer may divide by a variance of 0
        return (x - mean) / np.sqrt(variance)


def _standardize_mistakes(x):
    """Known wrong standardisations of x (n, m), each with what it means in the student's terms."""
    n, m = x.shape
    mean, local_mean = x.mean(), x.mean(axis=1, keepdims=True)
    out = [
        (_standardized(x, local_mean, x.var(axis=1, keepdims=True)),
         "each device standardised its row with its own local mean and variance (jnp.mean / jnp.std of the "
         "row); every device needs the global ones: lax.pmean over the devices"),
        (_standardized(x, mean, x.var(axis=1, keepdims=True)),
         "the mean is global, but each device divides by its own local standard deviation; the variance "
         "must be global too: lax.pmean of the squared distances from the global mean"),
        (_standardized(x, mean, x.var(axis=1).mean()),
         "the variance is the average of the devices' own variances, each measured around that device's "
         "own mean; measure squared distances from the global mean instead"),
        (_standardized(x, mean, x.var() * x.size / (x.size - 1)),
         f"it divides by N - 1 = {x.size - 1}; use the variance over all N = {x.size} numbers, as np.std does"),
        (_standardized(x, n * mean, n * ((x - n * mean) ** 2).mean()),
         "the mean and variance are n times too large: lax.psum where lax.pmean was meant"),
        (_standardized(x, n * mean, ((x - n * mean) ** 2).mean()),
         "the mean is n times too large: lax.psum where lax.pmean was meant"),
    ]
    for c in (2, 4, 8):
        if c != n:
            wrong_mean = x.sum() / (c * m)
            out.append((_standardized(x, wrong_mean, ((x - wrong_mean) ** 2).sum() / (c * m)),
                        f"it divides by {c} devices, but there are {n}: do not hard-code the device count, "
                        "lax.pmean divides by the right one"))
    return out


STANDARDIZE = {
    "factor": "the mean is right, and the standard deviation it divides by is off by that factor: the global one is "
              "the square root of the pmean of the squared distances from the global mean",
    "epsilon": "the task divides by the exact standard deviation, with no epsilon added to the variance and no step "
               "in a precision lower than float32",
    "nan": "with one number per device, whatever a device computes from its own row alone has no spread (its "
           "variance is 0, and a division by its count minus one divides by 0); only the global statistics, over "
           "all n numbers, are defined",
}


def _which(values, named) -> str | None:
    """The name in ``named`` (name -> one value per device) whose values ``values`` are, or None."""
    return next((name for name, want in named.items() if np.allclose(values, want, rtol=1e-3, atol=1e-6)), None)


def _measured_standardisation(x, got, what):
    """AssertionError saying which mean each device subtracted and which spread it divided by, measured: each
    row of a standardisation is (row - m) / s, so a straight line through (x, got) per row gives m and s;
    where one is a device's own (its row's, an average of the rows' own), both are said, named or given."""
    if x.shape[1] < 2 or not np.isfinite(got).all():
        return
    slope, intercept = (np.array(v) for v in zip(*(np.polyfit(row, out, 1) for row, out in zip(x, got))))
    if not np.allclose(slope[:, None] * x + intercept[:, None], got, rtol=1e-4, atol=1e-4) or not slope.all():
        return
    spread, mean = 1 / slope, -intercept / slope
    n = len(x)
    means = {"the global mean": np.full(n, x.mean()), "its own row's mean": x.mean(axis=1)}
    spreads = {"the global standard deviation": np.full(n, x.std()), "its own row's standard deviation": x.std(axis=1),
               "the square root of the devices' average variance, each around its own row's mean":
                   np.full(n, np.sqrt(x.var(axis=1).mean()))}
    m, d = _which(mean, means), _which(spread, spreads)
    if not ({m, d} - {None, "the global mean", "the global standard deviation"}):
        return  # nothing local is named: the value patterns tell a factor or an epsilon better
    m = m or f"{mean[0]:.4g} on device 0 (the global mean is {x.mean():.4g})"
    d = d or f"{spread[0]:.4g} on device 0 (the global standard deviation is {x.std():.4g})"
    raise AssertionError(f"{what}: each device subtracted {m} and divided by {d}; standardising across the devices "
                         "uses the mean and standard deviation of all the numbers on every device (lax.pmean)")


EPSILONS = (1e-10, 1e-2)  # what an epsilon added to a variance is, in practice


def _spread_factor(x, got, expected) -> str:
    """The "factor" cause of a standardisation off by one factor c: the spread it divides by is 1/c times the
    global standard deviation s, measured: the variance itself where 1/c is s (it divides by s twice); the variance
    with e added where that e is an epsilon's size."""
    ratio = got[np.abs(expected) > 1e-3] / expected[np.abs(expected) > 1e-3] if got.shape == expected.shape else []
    c, s = (float(np.mean(ratio)) if len(ratio) else None), float(x.std())
    said = STANDARDIZE["factor"]
    if c is None or c <= 0:
        return said
    if abs(1 / c - s) <= 1e-3 * s:  # (x - mean) / s**2 is the answer divided by s once more
        return f"{said}; it divides by the variance itself ({s * s:.4g}), not its square root"
    added = x.var() * (1 / c ** 2 - 1)
    if EPSILONS[0] <= added <= EPSILONS[1]:
        return f"{said}; it is what dividing by sqrt(variance + {added:.2g}) gives: the task adds nothing to the variance"
    return said


def _check_standardize(student, rng, devices, width, scale=1.0):
    x = (_per_device_data(rng, devices, width) * np.float32(scale)).astype(np.float32)
    x64 = x.astype(np.float64)
    got = as_array(student.call("collectives.standardize_across_devices", x), "standardize_across_devices(x)")
    what = f"standardize_across_devices(x) with x of shape {x.shape}"
    causes = STANDARDIZE if width == 1 else {k: v for k, v in STANDARDIZE.items() if k != "nan"}
    expected = _standardized(x64, x64.mean(), x64.var())
    causes = {**causes, "factor": _spread_factor(x64, np.asarray(got, np.float64), expected)}
    if not _close(got, expected) and not any(_close(got, wrong) for wrong, _ in _standardize_mistakes(x64)):
        _measured_standardisation(x64, np.asarray(expect_shape(got, x.shape, what), np.float64), what)
    probe = Probe(reference=_reference("standardize_across_devices"), inputs=(x,), names=("x",),
                  rerun=lambda v: student.call("collectives.standardize_across_devices", v))
    _expect_global(expect_shape(got, x.shape, what), expected, what, _standardize_mistakes(x64), causes, probe)


@pytest.mark.devices(1, 2, 4)
def test_standardize_across_devices(student, rng, devices):
    _check_standardize(student, rng, devices, WIDTHS["standardize_across_devices"][0])


def test_standardize_other_width(student, rng, devices):
    """One number per device (from 2 devices on: a device's own variance is then 0), and two; and numbers a
    thousandth as large, whose variance an epsilon added to it would swamp (the task adds none)."""
    for width in WIDTHS["standardize_across_devices"][1] if devices > 1 else (2,):
        _check_standardize(student, rng, devices, width)
    _check_standardize(student, rng, devices, MEASURED, scale=1e-3)


def _reference(name):
    """The float64 reference of the compiled ``name``, as a function of its input."""
    if name == "standardize_across_devices":
        return lambda x: _standardized(x.astype(np.float64), x.astype(np.float64).mean(), x.astype(np.float64).var())
    return lambda x: tuple(np.broadcast_to(stat(x.astype(np.float64), axis=0), x.shape) for stat in (np.sum, np.mean,
                                                                                                    np.max))


def _expect_all_reduces(student, rng, devices, name, width):
    x = _per_device_data(rng, devices, width)
    program = student.program(f"collectives.{name}", x, expect=_reference(name), what=f"{name}(x)", rtol=RTOL,
                              atol=ATOL, asks=Asks("jax.pmap"))
    feedback.communication(program, by_student=False)  # against the reference's program, measured
    if width != MEASURED:
        name = f"{name} with x of shape {x.shape}"
    text = program.hlo
    gathers = hlo.count(text, "all-gather")
    if gathers:
        raise AssertionError(f"{name} gathers the whole array onto every device ({gathers} all-gather); each "
                             "device needs only the reduced values: lax.psum / lax.pmean / lax.pmax")
    if not hlo.count(text, "all-reduce", by_student=True):
        raise AssertionError(f"{name} runs no all-reduce of its own{hlo.idle_note(text, 'all-reduce')}: it computes "
                             "on one device what the devices should compute together; call lax.psum / lax.pmean / "
                             "lax.pmax inside jax.pmap")
    missing = structure.missing_reductions(structure.steps(text), program.reference_collectives())
    if missing:
        raise AssertionError(f"{name}'s own collectives never take {' or '.join(missing)} across the devices, which "
                             "the reference's program does: each statistic that combines the devices' rows needs a "
                             "collective of its own, inside jax.pmap")
    share = "every device should work on its own row inside jax.pmap, and the all-reduces combine what the devices found"
    work.expect_no_whole_input_moved(program, name, devices, x.nbytes, "x", share)
    work.expect_share_of_work(program, name, share, devices)
    work.expect_collectives_of_reference(program, name, "each statistic that combines the devices' rows takes one "
                                         "all-reduce of what they found (lax.psum, lax.pmean, lax.pmax), and nothing "
                                         "else moves", devices)


@pytest.mark.devices(2, 4, 8)  # on one device nothing is split: no structure to measure
@pytest.mark.parametrize("name", list(WIDTHS))
def test_communicates_with_all_reduce(student, rng, devices, name):
    """Read at MEASURED columns, then at every width the value tests try at this device count."""
    visible, others = WIDTHS[name]
    for width in (MEASURED, *((visible,) if devices in VISIBLE_COUNTS else ()), *others):
        _expect_all_reduces(student, rng, devices, name, width)
