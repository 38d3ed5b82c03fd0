"""Suite for task fsdp: one training step with parameters sharded over 'data'.

probes_programs.on_mesh hands fsdp_step a one-axis ('data',) mesh of every device and a fixed lr;
student.program has a clean worker compile and run it. The reference is a float64 full-batch step on
one device. Visible tests run one batch at 1, 2 and 4 devices; the hidden ones (course.yaml) another
batch size, and read the compiled step for both batches: w gathered and the gradient reduce-scattered over 'data', no
gradient in an all-reduce, and each device left with its rows of the new w only.
"""

import numpy as np
import pytest

from grader.suite import explained, feedback, hlo, meshes, work
from grader.suite.bypass import Asks
from grader.suite.jax_errors import empty_assertion_on

AXES = ("data",)
JAX_ERRORS = (empty_assertion_on(AXES),)  # an axis name the mesh lacks, told against its axes
LR = 0.1


def sgd(w, x, y):
    """One full-batch step in float64: (new w, loss at the old w)."""
    residual = x.astype(np.float64) @ w - y
    return w - LR * 2 * x.T @ residual / residual.size, np.mean(residual ** 2)


def _explain(got, w, x, y, devices):
    """The averaging mistake behind a wrong step: the devices' gradients or losses summed, not averaged."""
    if not isinstance(got, (list, tuple)) or len(got) != 2:
        return
    new_w, loss = (np.asarray(v, np.float64) for v in got)
    expected_w, expected_loss = sgd(w, x, y)
    close = lambda a, b: a.shape == np.shape(b) and np.allclose(a, b, rtol=1e-4, atol=1e-5)  # noqa: E731
    if devices > 1 and close(new_w, w + devices * (expected_w - w)):
        raise AssertionError(f"fsdp_step's update is {devices} times the full-batch step on {devices} devices: the "
                             "gradient JAX hands back (reduce-scattered, or summed for parameters every device holds) "
                             "adds up every device's gradient; divide it by n, as each device's loss is a mean over "
                             "its own part of the batch")
    if devices > 1 and close(loss, devices * expected_loss):
        raise AssertionError(f"fsdp_step's loss is {devices} times the mean loss on {devices} devices: lax.psum adds "
                             "the devices' losses up; lax.pmean averages them")


def run(student, rng, devices, samples, asks=None):
    w = rng.normal(size=(2 * devices, 3)).astype(np.float32)
    x = rng.normal(size=(samples * devices, 2 * devices)).astype(np.float32)
    y = rng.normal(size=(samples * devices, 3)).astype(np.float32)
    fixed = {"function": "fsdp.fsdp_step", "shape": [devices], "axes": list(AXES), "lr": LR}
    with explained(lambda: _explain(student.probe("probes_programs.values", "on_mesh", w, x, y, **fixed), w, x, y,
                                    devices)):
        program = student.program("probes_programs.on_mesh", w, x, y, asks=asks, expect=sgd,
                                  what=f"fsdp_step(w, x, y, {LR}, mesh) on {devices} devices (new w, loss)",
                                  rtol=1e-4, atol=1e-5, counts=meshes.counts(AXES, (devices,)),
                                  arrives=(["data", None], ["data", None], ["data", None]),
                                  compare=(AXES, (devices,)), **fixed)
    return w, program


@pytest.mark.devices(1, 2, 4)
def test_fsdp_step_equals_a_full_batch_step(student, rng, devices):
    run(student, rng, devices, 3)


@pytest.mark.devices(2, 4, 8)
def test_fsdp_step_with_another_batch(student, rng, devices):
    run(student, rng, devices, 1)


@pytest.mark.devices(2, 4, 8)
def test_fsdp_step_gathers_weights_and_scatters_gradients(student, rng, devices):
    for samples in (3, 1):  # every batch a test of fsdp_step compiles (a program knows it while it is traced)
        _gathers_weights_and_scatters_gradients(student, rng, devices, samples)


def _gathers_weights_and_scatters_gradients(student, rng, devices, samples):
    w, program = run(student, rng, devices, samples, Asks())
    sizes, block = (devices,), w.nbytes // devices
    feedback.communication(program, by_student=False, mesh=(AXES, sizes))
    moved = meshes.moving(program.hlo, AXES, sizes)
    where = f"on {devices} devices, a batch of {samples * devices} rows"
    reduced = [c for c in moved if c.op == "all-reduce"]
    if meshes.per_run(reduced) > 4:  # together: a gradient all-reduced in pieces moves as much as in one
        what = "the whole gradient" if meshes.per_run(reduced) >= w.nbytes else "more than the loss's 4 bytes"
        if not any(c.by_student for c in reduced):  # measured: XLA's partitioner chose them, the code wrote none
            raise AssertionError(f"fsdp_step all-reduces {meshes.per_run_text(reduced)} per device {where}, {what}, "
                                 "and your code wrote none of them: the compiler (XLA's partitioner) chose them "
                                 "for the shardings you asked for (a w gathered by jax.reshard or a sharding constraint gets its "
                                 "gradient back whole, summed on every device: data parallelism). In FSDP each "
                                 "device updates only its rows: gather w yourself with lax.all_gather inside "
                                 "jax.shard_map, and JAX makes its gradient a reduce-scatter")
        raise AssertionError(f"fsdp_step all-reduces {meshes.per_run_text(reduced)} per device {where}, {what}: "
                             "that is data parallelism (a gradient summed by all-reduces, whole or in pieces), every "
                             "device updating all of w. In FSDP each device "
                             "keeps and updates only its rows, so it needs only its rows of the summed gradient: a "
                             "reduce-scatter (what JAX makes of an all_gather when it differentiates it), half the "
                             "traffic")
    kinds = sorted({c.op for c in moved} - {"all-reduce"})
    # a reduce-scatter by hand: each device's row blocks of its gradient sent to their owners by one all_to_all
    # (no more than the gradient, what a reduce-scatter puts in), then summed where they arrive
    # (together: an all_to_all of the batch in pieces, each under w's size, moves the batch all the same)
    exchanged = [c for c in moved if c.op == "all-to-all"]
    if kinds == ["all-gather", "all-to-all"] and meshes.per_run(exchanged) > w.nbytes:
        raise AssertionError(f"fsdp_step's all-to-alls move {meshes.per_run_text(exchanged)} per device {where}, more "
                             f"than the whole gradient of w ({w.nbytes} bytes): a reduce-scatter by hand sends each "
                             "device's gradient row blocks to their owners and no more; the batch stays where it is")
    by_hand = kinds == ["all-gather", "all-to-all"]
    # a reduce-scatter by hand sends what a product computed and sums what arrives (as matmuls case 3 measures it):
    # one that sends blocks of the inputs (round 41), or multiplies what it brought (round 42), gathers by another name
    if by_hand and not hlo.sends_products(program.hlo, "all-to-all"):
        raise AssertionError(f"fsdp_step's all-to-all {where} sends blocks of its inputs, which no product computed: a "
                             "reduce-scatter by hand sends each device's row blocks of its gradient to their owners, "
                             "to be summed where they arrive; the batch stays where it is")
    if by_hand and not hlo.sums_what_arrives(program.hlo, "all-to-all"):
        raise AssertionError(f"fsdp_step does more than add up what its all-to-all brings {where}: a reduce-scatter "
                             "by hand only sums the gradient row blocks that arrive (then each device updates its "
                             "rows); data that arrives to be multiplied was gathered, and the batch stays where it is")
    if kinds != ["all-gather", "reduce-scatter"] and not by_hand:
        ran = " and ".join(meshes.phrase(c, AXES, sizes) for c in moved) or "no collective"
        others = sorted(set(kinds) - {"all-gather", "reduce-scatter", "all-to-all"})
        # what follows from the kinds measured: another kind doing the gradient's exchange, or none (the gradient
        # of a w gathered outside the function differentiated arrives whole, with nothing to scatter)
        fix = (f"the {' and '.join(others)} {'is' if len(others) == 1 else 'are'} neither; exchange the gradient with "
               "one of those two") if others else "gather w inside the function you differentiate"
        raise AssertionError(f"fsdp_step runs {ran} {where}; a step needs an all-gather of w's blocks before use and a "
                             "reduce-scatter of the gradient after (lax.psum_scatter, or an all_to_all of its row "
                             f"blocks summed where they arrive): {fix}")
    gathered = [c for c in moved if c.op == "all-gather"]
    heavy = next((c for c in gathered if meshes.per_run(c) > block), None)
    if heavy:
        raise AssertionError(f"fsdp_step gathers {meshes.per_run_text(heavy)} per device {where}; w's block is "
                             f"{block}: gather the parameters only, the batch stays where it is")
    held = hlo.output_shapes(program.hlo)
    if held and held[0] != (w.shape[0] // devices, w.shape[1]):
        raise AssertionError(f"fsdp_step leaves every device a {held[0]} block of the new w {where}, expected its "
                             f"{(w.shape[0] // devices, w.shape[1])} rows: parameters stay sharded over 'data' "
                             "(out_specs P('data', None)), so each device's parameter memory is 1 / n of w")
    share = "each device takes the gradient of its own rows of the batch only, with the gathered w"
    if samples > 1:
        work.expect_share_of_work(program, "fsdp_step", share, devices, where)
    else:  # one row a device: a pass over its gradient (a scale) costs about its product, so a count of the
        work.expect_share_of_inputs(program, "fsdp_step", share, where)  # arithmetic cannot tell; its shares can
    work.expect_collectives_of_reference(program, "fsdp_step", "a step gathers w's blocks and reduce-scatters the "
                                         "gradient, once each", devices, where, alike={"all-to-all": "reduce-scatter"})
    if meshes.per_run(gathered) > block:  # together: the batch gathered in pieces, each under w's block
        raise AssertionError(f"fsdp_step gathers {meshes.per_run_text(gathered)} per device {where}; w's block is "
                             f"{block}: gather the parameters once, the batch stays where it is")
