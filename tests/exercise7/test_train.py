"""Suite for task train: data-parallel SGD equals full-batch SGD, replicas stay identical.

References are float64 full-batch gradient descent on one "device" (NumPy). The step is also read
from the compiled program: each device sends its gradient and its loss, and nothing else. Visible
tests run one learning rate and one data set at 1, 2 and 4 devices; the hidden ones (course.yaml)
try another learning rate and data size at every count, and read the compiled step.
"""

import re

import numpy as np
import pytest

from grader.suite import StudentFailure, expect_close, expect_sequence, expect_shape, feedback, hlo, work
from grader.suite.bypass import Asks
from grader.suite.jax_errors import Rule

D, B = 3, 5  # features, samples per device: B != D, so the chapter's params @ x fails loudly

CONTRACTION = ("the predictions are x @ params ((b, d) @ (d,) -> (b,)), not the chapter's params @ x, which "
               "contracts parameters with samples")


def _contraction(match, situation):
    """A product that contracts d with b is the chapter's params @ x; one that contracts d with the device count
    got the whole (n, d) params on every device: params are mapped (in_axes 0), not shared. Other sizes: no rule."""
    sizes = (int(match["a"] or match["a2"]), int(match["b"] or match["b2"]))
    if sizes == (D, B):
        return CONTRACTION
    if sizes == (D, situation.devices):
        return (f"x @ params contracts the {D} features with {situation.devices}, the device count: every device got "
                f"the whole params array ({situation.devices}, {D}) instead of its own replica (d,); params are mapped "
                "over the devices like the batch, only lr is shared: in_axes=(0, 0, None)")
    return None


# The chapter's params @ x and a params array shared instead of mapped, told in this task's words when the sizes
# in the error show which it is; the grader's own rules (grader.suite.jax_errors) tell the rest.
JAX_ERRORS = (Rule("a product of params and x", re.compile(r"contracting dimensions to have the same shape, got "
                                                           r"\((?P<a>\d+),?\) and \((?P<b>\d+),?\)|size (?P<b2>\d+) is "
                                                           r"different from (?P<a2>\d+)"), _contraction),)


def maps_lr(student, params, batch, lr) -> bool:
    """True if train_step runs when given one lr per device: it maps lr like params and batch."""
    try:
        student.call("train.train_step", params, batch, np.full(len(params), lr, np.float32))
    except StudentFailure:
        return False
    return True


def ask_step(student, params, batch, lr):
    """Call train_step; a failure with a scalar lr that a per-device lr avoids is the chapter's mapped lr."""
    try:
        return student.call("train.train_step", params, batch, lr)
    except StudentFailure as exc:
        if exc.kind != "raised" or not maps_lr(student, params, batch, lr):
            raise
    raise AssertionError("train_step maps lr over the devices like params and batch, but lr is one number for all "
                         "devices: build it with jax.pmap(..., in_axes=(0, 0, None)) or static_broadcasted_argnums=2")


def problem(rng, samples):
    X = rng.normal(size=(samples, D))
    y = X @ rng.normal(size=D) + 0.1 * rng.normal(size=samples)
    return rng.normal(size=D), X, y


def sgd(params, X, y, lr):
    """One full-batch step in float64: (new params, loss at the old params, gradient)."""
    residual = X @ params - y
    grad = 2 * X.T @ residual / len(y)
    return params - lr * grad, np.mean(residual ** 2), grad


def f32(*arrays):
    return tuple(np.asarray(a, np.float32) for a in arrays)


def run_step(student, rng, n, lr):
    params, X, y = problem(rng, n * B)
    replicated, Xs, ys = f32(np.broadcast_to(params, (n, D)), X.reshape(n, B, D), y.reshape(n, B))
    new, loss = expect_sequence(ask_step(student, replicated, (Xs, ys), lr), 2,
                                "train_step(params, batch, lr)")
    return (expect_shape(new, (n, D), "train_step's new params"), expect_shape(loss, (n,), "train_step's loss"),
            sgd(params, X, y, lr))


def _loss_mistakes(mse: float) -> list[tuple[float, str]]:
    """Known wrong losses for a mean squared error of ``mse`` over B samples, each with what it is."""
    return [(B * mse, f"the sum of the {B} squared errors, not their mean (jnp.mean)"),
            (mse / 2, "half the mean squared error: the task's loss has no factor 1/2"),
            (np.sqrt(mse), "the root of the mean squared error: the task's loss is the mean squared error itself")]


def test_loss_fn_matches_numpy(student, rng, devices):
    params, X, y = problem(rng, B)
    what = "loss_fn(params, (x, y))"
    got = expect_shape(student.call("train.loss_fn", *f32(params), f32(X, y)), (), what)
    mse = np.mean((X @ params - y) ** 2)
    for wrong, mistake in _loss_mistakes(mse):
        if not np.isclose(got, mse, rtol=1e-4) and np.isclose(got, wrong, rtol=1e-4):
            raise AssertionError(f"{what} returned {float(got):.6g}, expected {mse:.6g}: it is {mistake}")
    expect_close(got, mse, what=what, rtol=1e-4, dtype=np.float32)


def test_replicate_copies_params(student, rng, devices):
    params = rng.normal(size=D)
    expect_close(student.call("train.replicate", *f32(params), devices), np.broadcast_to(params, (devices, D)),
                 what=f"replicate(params, {devices})")


def _check_step(student, rng, devices, lr):
    new, _, (expected, _, grad) = run_step(student, rng, devices, lr)
    apart = [j for j in range(devices) if not np.allclose(new[j], new[0], rtol=1e-5, atol=1e-6)]
    if apart:
        raise AssertionError(f"after one train_step device {apart[0]} holds other params than device 0 on {devices} "
                             "devices: average the gradients with lax.pmean(grads, axis_name) before the update, "
                             "so every replica takes the same step")
    if devices > 1 and np.allclose(new[0], expected - (devices - 1) * lr * grad, rtol=1e-4, atol=1e-5):
        raise AssertionError(f"train_step's update is {devices} times the full-batch step on {devices} devices: the "
                             "step is lr times the devices' mean gradient (lax.pmean); their sum (lax.psum), or "
                             f"anything else scaled by the device count, is {devices} times that")
    expect_close(new[0], expected, what=f"params after one train_step on {devices} devices (lr={lr})",
                 rtol=1e-4, atol=1e-5, dtype=np.float32)


# The learning rates the value tests step with, at 1, 2 and 4 devices and at every count; the structural test
# reads the step at each of them too (MEASURED first), so a step honest only where it is read earns nothing there.
VISIBLE_LR, VISIBLE_COUNTS, OTHER_LR, MEASURED = 0.1, (1, 2, 4), 0.02, 0.05  # the counts as the markers say


@pytest.mark.devices(1, 2, 4)
def test_train_step_equals_full_batch_sgd(student, rng, devices):
    _check_step(student, rng, devices, VISIBLE_LR)


def test_train_step_with_another_lr(student, rng, devices):
    _check_step(student, rng, devices, OTHER_LR)


@pytest.mark.devices(1, 2, 4)
def test_train_step_returns_the_global_loss(student, rng, devices):
    _, loss, (_, expected, _) = run_step(student, rng, devices, MEASURED)
    if devices > 1 and not np.allclose(loss, loss[0], rtol=1e-5):
        raise AssertionError(f"train_step's loss differs between devices ({loss[0]:.4g} on device 0, "
                             f"{loss[1]:.4g} on device 1): each reports its own shard; lax.pmean the loss too")
    if devices > 1 and np.isclose(loss[0], devices * expected, rtol=1e-4):
        raise AssertionError(f"train_step's loss is {devices} times the mean loss on {devices} devices: "
                             "lax.psum adds the losses up; lax.pmean averages them")
    expect_close(loss, np.full(devices, expected), what=f"train_step's loss on {devices} devices", rtol=1e-4,
                 dtype=np.float32)


def step_reference(params, batch, lr):
    """One data-parallel step in float64, row d of params being device d's: (new params, each device's loss)."""
    X, y = (a.astype(np.float64) for a in batch)
    residual = np.einsum("nbd,nd->nb", X, params.astype(np.float64)) - y
    grad = (2 * np.einsum("nbd,nb->nd", X, residual) / y.shape[1]).mean(axis=0)
    return params - lr * grad, np.full(len(params), np.mean(residual ** 2))


def _expect_gradient_and_loss_only(student, rng, devices, lr):
    def replicas(generator):  # params the same on every device, as train_step is given them
        params, X, y = problem(generator, devices * B)
        return f32(np.broadcast_to(params, (devices, D)))[0], f32(X.reshape(devices, B, D), y.reshape(devices, B))

    name = "train_step" if lr == MEASURED else f"train_step with lr={lr}"
    program = student.program("probes_train.train_step", *replicas(rng), lr=lr, fresh=replicas,
                              expect=lambda params, batch: step_reference(params, batch, lr),
                              what=f"train_step(params, batch, lr={lr})", rtol=1e-4, atol=1e-5,
                              asks=Asks("jax.pmap"))
    feedback.communication(program)  # against the reference's program, measured
    text = program.hlo
    gathered = hlo.select(text, ("all-gather", "all-to-all", "collective-permute"), by_student=True)
    if gathered:
        raise AssertionError(f"{name} runs {gathered[0].a} (from lax.{gathered[0].origin}): the data stays "
                             "where it is; each device sends only its gradient and its loss, with lax.pmean")
    sent, limit = hlo.bytes_moved(text, "all-reduce", by_student=True), (D + 1) * 4
    if sent == 0:
        raise AssertionError(f"{name} runs no all-reduce of its own{hlo.idle_note(text, 'all-reduce')}: the "
                             "devices never averaged anything the step needs, so it was not computed by the devices "
                             "together; pmap a per-device step and lax.pmean its gradient and its loss over the axis "
                             "name")
    if sent is None:
        raise AssertionError(f"{name} all-reduces inside a loop of unknown length; one step needs one pmean of "
                             "the gradient and one of the loss")
    if sent > limit:
        raise AssertionError(f"{name} all-reduces {sent} bytes per device per step; a gradient of {D} float32 "
                             f"and a loss are {limit}: pmean only those")
    work.expect_share_of_work(program, name,
                              f"each device takes the gradient of its own shard of {B} samples, and the pmean "
                              "averages the devices' gradients", devices)
    work.expect_collectives_of_reference(program, name, "each device sends only its gradient and its loss, "
                                         "with lax.pmean", devices)


@pytest.mark.devices(2, 4, 8)  # on one device nothing is split: no structure to measure
def test_train_step_sends_only_gradient_and_loss(student, rng, devices):
    """Read at MEASURED, then at every learning rate the value tests step with at this device count."""
    for lr in (MEASURED, *((VISIBLE_LR,) if devices in VISIBLE_COUNTS else ()), OTHER_LR):
        _expect_gradient_and_loss_only(student, rng, devices, lr)


def _expect_no_padded_samples(got_losses, params, X, y, steps, lr, devices):
    """Fail, saying so, if fit's losses are those of the samples padded with zero rows to a multiple of devices."""
    pad = -len(X) % devices
    if not pad:
        return
    Xp, yp = np.concatenate([X, np.zeros((pad, D))]), np.concatenate([y, np.zeros(pad)])
    padded, losses = params, []
    for _ in range(steps):
        padded, loss, _ = sgd(padded, Xp, yp, lr)
        losses.append(loss)
    if np.allclose(got_losses, losses, rtol=1e-3, atol=1e-5):
        used = len(X) - (len(X) % devices)
        raise AssertionError(f"fit on {devices} devices pads the {len(X)} samples with {pad} zero row"
                             f"{'s' if pad > 1 else ''} and trains on all {len(Xp)}: keep the first {used} samples and "
                             f"drop the remaining {len(X) - used}, as a data loader's drop_last does")


def _check_fit(student, rng, devices, samples):
    steps, lr = 12, 0.1
    params, X, y = problem(rng, samples)
    used = len(X) // devices * devices
    expected, losses = params, []
    for _ in range(steps):
        expected, loss, _ = sgd(expected, X[:used], y[:used], lr)
        losses.append(loss)
    got = expect_sequence(student.call("train.fit", *f32(params, X, y), steps, lr), 2, "fit(params, X, y, steps, lr)")
    got_losses = expect_shape(np.asarray(got[1], dtype=float), (steps,), "fit's losses")
    if not got_losses[-1] < got_losses[0]:
        raise AssertionError(f"the loss did not fall over fit on {devices} devices ({got_losses[0]:.4g} -> "
                             f"{got_losses[-1]:.4g} in {steps} steps)")
    what = f"fit on {devices} devices with {len(X)} samples (it uses the first {used})"
    _expect_no_padded_samples(got_losses, params, X, y, steps, lr, devices)
    after = sgd(expected, X[:used], y[:used], lr)[1]  # the loss after the last step
    if not np.allclose(got_losses, losses, rtol=1e-3, atol=1e-5) and \
            np.allclose(got_losses, [*losses[1:], after], rtol=1e-3, atol=1e-5):
        raise AssertionError(f"the losses of {what} are the losses after each step, one step late: record the loss "
                             "before each step, the one train_step returns for the params it was given")
    if not np.allclose(got_losses, losses, rtol=1e-3, atol=1e-5):  # measured on one step, where a factor shows
        one = expect_sequence(student.call("train.fit", *f32(params, X, y), 1, lr), 2, "fit(params, X, y, 1, lr)")
        expect_close(one[0], sgd(params, X[:used], y[:used], lr)[0], what=f"params after one step of {what}",
                     rtol=1e-3, atol=1e-5, starts=f32(params), counts={"devices": devices})
    expect_close(got_losses, losses, what=f"losses of {what}", rtol=1e-3, atol=1e-5)
    expect_close(got[0], expected, what=f"params after {what}", rtol=1e-3, atol=1e-5)


@pytest.mark.devices(1, 2, 4)
def test_fit_loss_falls_and_matches_full_batch_sgd(student, rng, devices):
    _check_fit(student, rng, devices, 51)  # 51 samples: not a multiple of 2, 4 or 8


def test_fit_drops_the_remainder(student, rng, devices):
    _check_fit(student, rng, devices, 8 * B + devices - 1)  # devices - 1 samples left over on every count
