"""Suite for task shard: shard_batch, pad_and_shard (with a mask of real rows) and unshard.

Visible tests run the statement's cases at 1, 2 and 4 devices; the hidden ones (course.yaml) try
the edges at every count: fewer rows than devices, batches that already divide, real rows that are
all zeros, and bfloat16 / uint8 / bool batches whose dtype the padding must keep.
"""

import ml_dtypes
import numpy as np
import pytest

from grader.suite import as_array, expect_close, expect_raises, expect_sequence, expect_shape, feedback


def _n_devices(devices):
    """The case's device count, and 3, a count no configuration has: n_devices is an argument, not a global."""
    return (devices, 3)


def _batch(rng, rows, rest=(), dtype=np.float32):
    """Random rows of ``dtype``: normal floats, small ints, 0/1 bools, byte pixels."""
    if dtype == np.bool_:
        return rng.integers(0, 2, size=(rows, *rest)).astype(bool)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 100, size=(rows, *rest)).astype(dtype)
    return rng.normal(size=(rows, *rest)).astype(dtype)


def _with_zero_rows(x, rows):
    """``x`` with the given real rows set to zeros: a real row may be all zeros."""
    x = x.copy()
    x[list(rows)] = 0
    return x


def _rows_text(n):
    return f"{n} row{'s' if n != 1 else ''}"


DEALT = ("deals the rows out like cards (row i to device i % n); each device should hold a block of consecutive "
         "rows, device 0 the first ones: reshape to (n_devices, per, ...) without transposing")
INTERLEAVED = ("interleaves the devices' rows (device 0's first row, then device 1's first row, ...); put them back "
               "in device order, all of device 0's rows first: reshape to (n_devices * per, ...) without transposing")


def _expect_dtype(got, x, what):
    """Reshaping and zero padding keep the batch's dtype: int ids, byte pixels and bools stay what they are."""
    if got.dtype != x.dtype:
        raise AssertionError(f"{what} returned dtype {got.dtype} for a batch of dtype {x.dtype}: keep x's dtype "
                             f"(pad with zeros of x.dtype, as jnp.pad does); a {x.dtype} batch turned {got.dtype} "
                             "is another batch")


def _expect_blocks(got, expected, transposed, what, mistake):
    """Exact comparison that names ``mistake`` when the rows came out transposed (the order of a deck dealt out)."""
    if got.shape == expected.shape and not np.array_equal(got, expected) and np.array_equal(got, transposed):
        raise AssertionError(f"{what} {mistake}")
    expect_close(got, expected, what=what, rtol=0, atol=0)
    _expect_dtype(got, expected, what)


def show_rows(what, x, got, n):
    """The picture of which rows of x each device's block holds, expected against the student's array."""
    per = len(x) // n
    expected = [[f"d{d}: {feedback.rows_held(x, x[d * per:(d + 1) * per])}"] for d in range(n)]
    if got.ndim and got.shape[0] == n:
        mine = [[f"d{d}: {feedback.rows_held(x, got[d])}"] for d in range(n)]
    else:
        mine = [[f"shape {got.shape}: no block per device"]]
    feedback.layout(what, expected, mine)


def _check_shard_batch(student, x, n, devices, picture=False):
    rows, rest = x.shape[0], x.shape[1:]
    what = f"shard_batch(x, {n}) with x of shape {x.shape}"
    got = as_array(student.call("shard.shard_batch", x, n), what)
    if picture:
        show_rows(what, x, got, n)
    if got.shape[:1] == (devices,) and n != devices:
        raise AssertionError(f"{what} returned shape {got.shape}, expected {(n, rows // n, *rest)}: use the "
                             f"n_devices argument ({n}), not the number of devices JAX has ({devices})")
    interleaved = np.moveaxis(x.reshape(rows // n, n, *rest), 0, 1)
    _expect_blocks(got, x.reshape(n, rows // n, *rest), interleaved, what, DEALT)


@pytest.mark.devices(1, 2, 4)
def test_shard_batch(student, rng, devices):
    for n in _n_devices(devices):
        for per, rest, dtype in [(8, (), np.float32), (2, (5,), np.float32), (3, (), np.int32)]:
            _check_shard_batch(student, _batch(rng, n * per, rest, dtype), n, devices, picture=n == devices and per == 8)


def test_shard_batch_edges(student, rng, devices):
    for n in _n_devices(devices):
        for per, rest, dtype in [(1, (2, 3), ml_dtypes.bfloat16), (2, (2, 2), np.uint8), (4, (), np.bool_)]:
            _check_shard_batch(student, _batch(rng, n * per, rest, dtype), n, devices)


@pytest.mark.devices(1, 2, 4)
def test_shard_batch_rejects_uneven_batch(student, rng, devices):
    for n in sorted(set(_n_devices(devices)) - {1}):
        rows = 3 * n + 1
        x = _batch(rng, rows)
        expect_raises(lambda: student.call("shard.shard_batch", x, n), "ValueError",
                      f"shard_batch(x, {n}) with a batch of {rows} rows", mentions=(rows, n), facts=x.shape,
                      why=f"{rows} rows do not split evenly over {n} devices; name both numbers")


def _check_mask(mask, x, n, per, what):
    rows = x.shape[0]
    mask = expect_shape(mask, (n, per), f"{what}: the mask")
    if mask.dtype != np.bool_:
        raise AssertionError(f"{what}: the mask has dtype {mask.dtype}, expected bool (True on real rows)")
    expected = (np.arange(n * per) < rows).reshape(n, per)
    if np.array_equal(mask, expected):
        return
    padding = n * per - rows
    if mask.all():
        last = "the last row is" if padding == 1 else f"the last {padding} rows are"
        raise AssertionError(f"{what}: the mask says every row is real, but {last} padding: mark them "
                             "False, or a reduction would count the padding rows")
    d, r = (int(i) for i in np.argwhere(mask != expected)[0])
    row = d * per + r
    if expected[d, r] and not x[row].any():
        raise AssertionError(f"{what}: the mask says row {row} (device {d}, row {r}) is padding, but it is a real row "
                             "that happens to be all zeros: mark real rows by position (the first "
                             f"{rows}), not by their values")
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
    dealt = np.moveaxis(expected.reshape(per, n, *rest), 0, 1)
    if not np.array_equal(sharded, expected.reshape(dealt.shape)) and np.array_equal(sharded, dealt):
        raise AssertionError(f"{what} {DEALT}")  # padded first, then dealt out (round 49)
    front = np.concatenate([expected[rows:], x])
    # rows that can be told apart (bools and bytes repeat: rows dealt out like cards can read as padding first)
    distinct = len({row.tobytes() for row in expected}) == min(rows + 1, len(expected))
    if distinct and not np.array_equal(sharded.reshape(expected.shape), expected) and \
            np.array_equal(sharded.reshape(front.shape), front):
        raise AssertionError(f"{what} puts the padding first; pad at the end, so the real rows come first")
    expect_close(sharded, expected.reshape(sharded.shape), what=f"{what}: the sharded batch (zero padding at the end)",
                 rtol=0, atol=0)
    _expect_dtype(sharded, x, what)
    return per


def _check_pad_and_shard(student, x, n):
    what = f"pad_and_shard(x, {n}) with x of shape {x.shape} and dtype {x.dtype}"
    sharded, mask = expect_sequence(student.call("shard.pad_and_shard", x, n), 2, what)
    per = _check_sharded(as_array(sharded, what), x, n, what)
    _check_mask(mask, x, n, per, what)


@pytest.mark.devices(1, 2, 4)
def test_pad_and_shard(student, rng, devices):
    for rows, n, rest, dtype in [(2 * devices + 1, devices, (), np.float32), (7, 3, (2,), np.float32),
                                 (2 * devices + 1, devices, (3,), np.int32)]:
        _check_pad_and_shard(student, _batch(rng, rows, rest, dtype), n)


def test_pad_and_shard_edges(student, rng, devices):
    """Fewer rows than devices, a batch that divides (of bfloat16), real rows of zeros, byte pixels and bools."""
    n = devices
    cases = [(1, n, (2,), np.float32), (max(n - 1, 1), n, (), np.float32), (3 * n, n, (2,), ml_dtypes.bfloat16),
             (2 * n + 1, n, (2, 2), np.uint8), (5, 3, (), np.bool_)]
    for rows, n_devices, rest, dtype in cases:
        _check_pad_and_shard(student, _batch(rng, rows, rest, dtype), n_devices)
    rows = 2 * n + 1
    _check_pad_and_shard(student, _with_zero_rows(_batch(rng, rows, (3,)), {0, rows - 1}), n)


def _check_unshard(student, x):
    n, per, rest = x.shape[0], x.shape[1], x.shape[2:]
    what = f"unshard(x) with x of shape {x.shape}"
    got = as_array(student.call("shard.unshard", x), what)
    flat = x.reshape(n * per, *rest)
    if got.ndim == flat.ndim and got.shape[0] != n * per:
        nonzero = flat[flat.reshape(n * per, -1).any(axis=1)]
        if got.shape == nonzero.shape and np.array_equal(got, nonzero):
            raise AssertionError(f"{what} returned {_rows_text(got.shape[0])}, expected {n * per}: it drops the rows "
                                 "that are all zeros, but a real row can be all zeros; unshard keeps every row, and "
                                 "the mask is what leaves the padding out (unshard(sharded)[unshard(mask)])")
        raise AssertionError(f"{what} returned {_rows_text(got.shape[0])}, expected n_devices * per = {n * per}: "
                             "unshard keeps every row, padding included")
    interleaved = np.moveaxis(x, 0, 1).reshape(n * per, *rest)
    _expect_blocks(got, flat, interleaved, what, INTERLEAVED)


@pytest.mark.devices(1, 2, 4)
def test_unshard(student, rng, devices):
    for n in _n_devices(devices):
        for per, rest in [(3, ()), (2, (5,))]:
            _check_unshard(student, rng.normal(size=(n, per, *rest)).astype(np.float32))


def test_unshard_keeps_every_row(student, rng, devices):
    """Rows of zeros (real or padding) and dtypes other than float32 come back as they went in."""
    for n in _n_devices(devices):
        x = _batch(rng, n * 3, (2,))
        _check_unshard(student, _with_zero_rows(x, {0, n * 3 - 1}).reshape(n, 3, 2))
        _check_unshard(student, _batch(rng, n * 2, (2, 2), np.uint8).reshape(n, 2, 2, 2))


def _check_round_trip(student, x, n):
    rows = x.shape[0]
    sharded, mask = expect_sequence(student.call("shard.pad_and_shard", x, n), 2, f"pad_and_shard(x, {n})")
    back = as_array(student.call("shard.unshard", sharded), "unshard(sharded)")
    real = as_array(student.call("shard.unshard", mask), "unshard(mask)")
    what = f"unshard(sharded)[unshard(mask)] after pad_and_shard(x, {n}) with {rows} rows"
    padded_rows = n * -(-rows // n)
    if back.shape[:1] != (padded_rows,):
        raise AssertionError(f"{what}: unshard(sharded) has {_rows_text(back.shape[0])}, expected {padded_rows} (the "
                             "real rows and the padding); unshard keeps every row, the mask removes the padding")
    if real.dtype != np.bool_ or real.shape != back.shape[:1]:
        raise AssertionError(f"{what}: unshard(mask) returned {real.dtype} of shape {real.shape}, expected a bool "
                             f"vector with one entry per row of unshard(sharded) ({back.shape[0]})")
    expect_close(back[real], x, what=what, rtol=0, atol=0)


@pytest.mark.devices(1, 2, 4)
def test_round_trip(student, rng, devices):
    n = devices
    x = _batch(rng, 4 * n, (3,))
    back = student.call("shard.unshard", student.call("shard.shard_batch", x, n))
    expect_close(back, x, what=f"unshard(shard_batch(x, {n})) with x of shape {x.shape}", rtol=0, atol=0)
    _check_round_trip(student, _batch(rng, 2 * n + 1, (3,)), n)


def test_round_trip_with_rows_of_zeros(student, rng, devices):
    rows = 2 * devices + 1
    _check_round_trip(student, _with_zero_rows(_batch(rng, rows, (3,)), {rows - 1}), devices)
