"""Hidden suite for task shard: shard_batch, pad_and_shard (with a mask of real rows) and unshard."""

import numpy as np

from grader.suite import as_array, expect_close, expect_raises, expect_sequence, expect_shape, feedback


def _n_devices(devices):
    """The case's device count, and 3, a count no configuration has: n_devices is an argument, not a global."""
    return (devices, 3)


def _batch(rng, rows, rest=()):
    return rng.normal(size=(rows, *rest)).astype(np.float32)


def _rows_text(n):
    return f"{n} row{'s' if n != 1 else ''}"


DEALT = ("deals the rows out like cards (row i to device i % n); each device should hold a block of consecutive "
         "rows, device 0 the first ones: reshape to (n_devices, per, ...) without transposing")
INTERLEAVED = ("interleaves the devices' rows (device 0's first row, then device 1's first row, ...); put them back "
               "in device order, all of device 0's rows first: reshape to (n_devices * per, ...) without transposing")


def _expect_blocks(got, expected, transposed, what, mistake):
    """Exact comparison that names ``mistake`` when the rows came out transposed (the order of a deck dealt out)."""
    if got.shape == expected.shape and not np.array_equal(got, expected) and np.array_equal(got, transposed):
        raise AssertionError(f"{what} {mistake}")
    expect_close(got, expected, what=what, rtol=0, atol=0)


def show_rows(what, x, got, n):
    """The picture of which rows of x each device's block holds, expected against the student's array."""
    per = len(x) // n
    expected = [[f"d{d}: {feedback.rows_held(x, x[d * per:(d + 1) * per])}"] for d in range(n)]
    if got.ndim and got.shape[0] == n:
        mine = [[f"d{d}: {feedback.rows_held(x, got[d])}"] for d in range(n)]
    else:
        mine = [[f"shape {got.shape}: no block per device"]]
    feedback.layout(what, expected, mine)


def test_shard_batch(student, rng, devices):
    for n in _n_devices(devices):
        for per, rest in [(8, ()), (2, (5,)), (1, (2, 3))]:
            x = _batch(rng, n * per, rest)
            what = f"shard_batch(x, {n}) with x of shape {x.shape}"
            got = as_array(student.call("shard.shard_batch", x, n), what)
            if n == devices and not rest:
                show_rows(what, x, got, n)
            if got.shape[:1] == (devices,) and n != devices:
                raise AssertionError(f"{what} returned shape {got.shape}, expected {(n, per, *rest)}: use the "
                                     f"n_devices argument ({n}), not the number of devices JAX has ({devices})")
            interleaved = np.moveaxis(x.reshape(per, n, *rest), 0, 1)
            _expect_blocks(got, x.reshape(n, per, *rest), interleaved, what, DEALT)


def test_shard_batch_rejects_uneven_batch(student, rng, devices):
    for n in sorted(set(_n_devices(devices)) - {1}):
        rows = 3 * n + 1
        x = _batch(rng, rows)
        expect_raises(lambda: student.call("shard.shard_batch", x, n), "ValueError",
                      f"shard_batch(x, {n}) with a batch of {rows} rows", mentions=(rows, n),
                      why=f"{rows} rows do not split evenly over {n} devices; name both numbers")


def _pad_cases(devices):
    """(rows, n_devices, row shape): not a multiple, fewer rows than devices, a multiple, n_devices = 3."""
    n = devices
    return sorted({(1, n, (2,)), (2 * n + 1, n, ()), (3 * n, n, (2,)), (max(n - 1, 1), n, ()), (7, 3, (2,))})


def _check_mask(mask, rows, n, per, what):
    mask = expect_shape(mask, (n, per), f"{what}: the mask")
    if mask.dtype != np.bool_:
        raise AssertionError(f"{what}: the mask has dtype {mask.dtype}, expected bool (True on real rows)")
    expected = (np.arange(n * per) < rows).reshape(n, per)
    if not np.array_equal(mask, expected):
        padding = n * per - rows
        if mask.all():
            last = "the last row is" if padding == 1 else f"the last {padding} rows are"
            raise AssertionError(f"{what}: the mask says every row is real, but {last} padding: mark them "
                                 "False, or a reduction would count the padding rows")
        d, r = (int(i) for i in np.argwhere(mask != expected)[0])
        raise AssertionError(f"{what}: the mask is wrong at device {d}, row {r}: got {bool(mask[d, r])}, expected "
                             f"{bool(expected[d, r])} (the real rows are the first {rows} in device order)")


def _check_sharded(sharded, x, n, what):
    """The padded batch: ceil(B / n) rows per device, the real rows first, zero rows after them."""
    rows, rest = x.shape[0], x.shape[1:]
    per = -(-rows // n)
    if sharded.ndim == x.ndim + 1 and sharded.shape[0] == n and sharded.shape[1] != per:
        why = (f"{_rows_text(rows)} already split evenly, no padding is needed" if rows % n == 0
               else f"round up: ceil({rows} / {n}) = {per}, or rows are lost")
        raise AssertionError(f"{what} puts {_rows_text(sharded.shape[1])} on each device, expected {per}: {why}")
    expect_shape(sharded, (n, per, *rest), what)
    expected = np.concatenate([x, np.zeros((n * per - rows, *rest), x.dtype)])
    front = np.concatenate([expected[rows:], x])
    if not np.array_equal(sharded.reshape(expected.shape), expected) and \
            np.array_equal(sharded.reshape(front.shape), front):
        raise AssertionError(f"{what} puts the padding first; pad at the end, so the real rows come first")
    expect_close(sharded, expected.reshape(sharded.shape), what=f"{what}: the sharded batch (zero padding at the end)",
                 rtol=0, atol=0)
    return per


def test_pad_and_shard(student, rng, devices):
    for rows, n, rest in _pad_cases(devices):
        x = _batch(rng, rows, rest)
        what = f"pad_and_shard(x, {n}) with x of shape {x.shape}"
        sharded, mask = expect_sequence(student.call("shard.pad_and_shard", x, n), 2, what)
        per = _check_sharded(as_array(sharded, what), x, n, what)
        _check_mask(mask, rows, n, per, what)


def test_unshard(student, rng, devices):
    for n in _n_devices(devices):
        for per, rest in [(3, ()), (2, (5,))]:
            x = rng.normal(size=(n, per, *rest)).astype(np.float32)
            what = f"unshard(x) with x of shape {x.shape}"
            got = as_array(student.call("shard.unshard", x), what)
            interleaved = np.moveaxis(x, 0, 1).reshape(n * per, *rest)
            _expect_blocks(got, x.reshape(n * per, *rest), interleaved, what, INTERLEAVED)


def test_round_trip(student, rng, devices):
    n = devices
    x = _batch(rng, 4 * n, (3,))
    back = student.call("shard.unshard", student.call("shard.shard_batch", x, n))
    expect_close(back, x, what=f"unshard(shard_batch(x, {n})) with x of shape {x.shape}", rtol=0, atol=0)
    rows = 2 * n + 1
    x = _batch(rng, rows, (3,))
    sharded, mask = expect_sequence(student.call("shard.pad_and_shard", x, n), 2, f"pad_and_shard(x, {n})")
    back = as_array(student.call("shard.unshard", sharded), "unshard(sharded)")
    real = as_array(student.call("shard.unshard", mask), "unshard(mask)")
    what = f"unshard(sharded)[unshard(mask)] after pad_and_shard(x, {n}) with {rows} rows"
    if real.dtype != np.bool_ or real.shape != back.shape[:1]:
        raise AssertionError(f"{what}: unshard(mask) returned {real.dtype} of shape {real.shape}, expected a bool "
                             f"vector with one entry per row of unshard(sharded) ({back.shape[0]})")
    expect_close(back[real], x, what=what, rtol=0, atol=0)
