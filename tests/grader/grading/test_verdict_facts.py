"""Structural points only for programs that really compute: a hostile catalogue.

Every fact a verdict rests on is computed by a process that never ran student code, or is a value
checked against the reference on inputs the student's process never saw. Each submission below
wants a structural point without the algorithm, each in one way a rule of the engine stops:

* values learned in the student's process (from an earlier call) baked into the program as
  constants, also handed over through a patched ``jax.jit`` or ``jax.export``: right on the test's
  inputs, wrong on the set the grader draws (grader.grading.program_mode); a program made for
  other inputs than the test's is refused (grader.sandbox.program_runner);
* a program right only on the inputs a table knows, those the printed seed gave the test and the
  stream program mode once drew after it: the drawn inputs come from a per-run secret no report
  shows (grader.grading.plugin);
* a collective for show beside a computation done another way (XLA's partitioner adding up the devices'
  dots): a psum of a constant, of ``x * 0``, or one whose result is multiplied by 0 is idle and not counted:
  the clean worker replaced its result by zeros and the answer did not change; one whose value is only tested
  (is it not zero) is not counted either: negated, it changes the answer just as zeros do, or not at all
  (grader.sandbox.program_ablation); a pmap whose psum only decides whether the input is used, the dot left to
  XLA, holds no per-device computation the answer needs, measured the same way;
* the whole dot on every device on copies of the inputs a reading of the data flow takes for zeros (made
  through a reduction whose reducer turns zeros into ones), beside a psum of the wrong data whose result cancels:
  the work counted is what the device runs, whatever its values look like (grader.suite.hlo.operations);
* an all-reduce of each device's row written into zeros, which gathers the whole array onto every device: its
  bytes are the whole input's, five times the reference's, and the sums over it are the whole work;
* the right collective on the wrong data, a psum of the whole dot product each device took divided
  by the device count, or of the dots of every slice taken one by one on every device; exercise 8's
  case 3 reduce-scattering rows of x @ w each device multiplied whole: each device does n times the
  arithmetic of one device of the reference program (grader.suite.work);
* a psum labelled as something XLA added (a lying ``op_name``): the clean worker names every
  operation by what it is (grader.sandbox.program_labels);
* ``jax.make_jaxpr`` patched to print a pmap: the pmap is read from the compiled program; a pmap
  whose result the answer does not need, beside the work done whole, does not count (measured like
  a collective, grader.sandbox.program_ablation);
* exercise 8's tasks computed whole on every device, with a ring of ppermutes or a psum for show
  (measured idle), or with no collective at all where the algorithm needs them (two_d); FSDP's step
  with its collectives right and the batch whole on every device (the work, grader.suite.work);
* the vectors or FSDP's parameters handed whole to every device's pmap or shard_map, which slices its
  part out: the reference's arithmetic and collectives, but the input is not split; each device's
  per-device computation receives n times the reference's share of it (grader.sandbox.program_held), also
  where each vector is first mixed with the other by a select that never picks it (all of both, in x's bytes);
* exercise 8's compiler with x and w copied whole to every device by ``jax.device_put`` before the
  product: jit drops that, so the program is exported as the code runs outside jit, the copies kept
  (grader.sandbox.program_as_written);
* a ring of direct sends (both exercises): n - 1 ppermutes of one block each, every one needed, each sending the
  device's own block k places along instead of passing on what arrived (grader.suite.rings), also where each
  send's operand reads the one before in a way worth nothing (``x + (arrived - arrived)``, ``x + 0 * sent``): the
  clean worker measures that it carries the same whatever arrived (grader.sandbox.program_ring_steps);
* a ring's per-device function (both exercises) that finds the whole x up the call stack, the tracer the test's own
  pmap or shard_map was handed, takes the answer from it, and runs the ring beside it, its ppermutes made needed by a
  term that cancels when they carry what they should: x then reaches every device whole, n times the share the
  reference's per-device function receives (grader.suite.work.expect_share_of_inputs);
* a ring all-reduce whose devices each send their own block k hops by k ppermutes along the ring, the chains
  tied to each other by a factor that is 1 whenever anything arrived: one route and no fresh start, but n(n - 1)/2
  blocks sent, where a ring sends n - 1 (tests/exercise7/test_ring.py);
* the devices' values combined by another collective than the task's (a ring of ppermutes, a reduce-scatter of n
  copies: an all-reduce in disguise) while the one psum only hands on one device's result: a kind the reference's
  program never runs, or more bytes in a kind than its (grader.suite.work.expect_collectives_of_reference);
* exercise 8's collective matmul whose ring waits behind a barrier, with copies of the device's own product (scaled
  apart, averaged into the answer) beside each ppermute: needed and independent of the ring, but the products come
  to more than the reference's (grader.suite.work.expect_products_once);
* exercise 8's collective matmul taken from the whole x the task hands over as NumPy, beside a ring of a flag
  that selects it: the grader hands x over split as the statement says (``arrives``), so the whole copy is an
  all-gather the suite finds;
* an all-reduce or all-gather by recursive doubling, and exercise 7's optimal ring by recursive halving and
  doubling: each step passes on what arrived, in as many bytes as a ring or fewer, but to a partner 1, 2, 4
  places away: the ppermutes take more routes than a ring's one and its reverse (grader.suite.rings).

They are graded by the exercises' own structural tests (their test functions cut out of the suites,
the module names changed), and by two tests of this file's own in which the student's process sees
the test's inputs once before the program is asked for. All of it in one run of the real ``grade``,
and again in Gradescope's layout with the real exercise 7 suites, where the hostile modules replace
the solution's: no structural case passes, every value case does.
"""

from __future__ import annotations

import ast
import json
import textwrap
import zlib

import numpy as np
import pytest
from conftest import ROOT, run_grade
from release_helpers import EXERCISE, checked, copy_course, release, run_autograder

SUITES = ROOT / "tests" / EXERCISE

# FSDP's step around the submission's own _per_device, shard_map's replication check off (two hostiles end with it).
FSDP_UNCHECKED = '''

def fsdp_step(w, x, y, lr, mesh):
    rows = NamedSharding(mesh, P("data", None))
    w, x, y = (jax.device_put(a, rows) for a in (w, x, y))
    step = jax.shard_map(lambda w, x, y: _per_device(w, x, y, lr), mesh=mesh, in_specs=P("data", None),
                         out_specs=(P("data", None), P()), check_vma=False)
    return step(w, x, y)
'''

# The whole vectors handed to every device's pmap, each slicing its part (two hostiles below start from it).
WHOLE_SLICED = '''
        import jax
        import jax.numpy as jnp
        from jax import lax


        def distributed_dot(x, y):
            n = jax.device_count()
            x, y = (jnp.pad(v, (0, -v.shape[0] % n)) for v in (x, y))
            per = x.shape[0] // n

            def part(_, x, y):
                start = lax.axis_index("i") * per
                return lax.psum(jnp.dot(lax.dynamic_slice_in_dim(x, start, per), lax.dynamic_slice_in_dim(y, start, per)),
                                "i")

            return jax.pmap(part, axis_name="i", in_axes=(0, None, None))(jnp.zeros(n), x, y)[0]
        '''

# Values seen once in the student's process, kept; a program that returns them as a constant next to
# a psum of (slice - slice), which no reading of HLO calls idle, each device's work only its slices.
# Only values on inputs the process never saw tell it from a distributed dot.
LEARNING = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_seen = {}


def _record(x, y):
    if not isinstance(x, jax.core.Tracer):
        _seen[np.shape(x)] = np.float32(np.dot(np.asarray(x, np.float64), np.asarray(y, np.float64)))


def _split(v, n):
    return jnp.pad(v, (0, -v.shape[0] % n)).reshape(n, -1)


def _baked(x, y):
    n = jax.device_count()
    nothing = jax.pmap(lambda a, b: lax.psum(jnp.dot(a - a, b), "i"), axis_name="i")(_split(x, n), _split(y, n))[0]
    return nothing + _seen.get(x.shape, 0.0)
'''
# A plain dot on every device, and a psum next to it that carries nothing: PSUM_OF is what is psummed.
DOT_FOR_SHOW = '''
import jax
import jax.numpy as jnp
from jax import lax


def distributed_dot(x, y):
    n = jax.device_count()
    row = jnp.broadcast_to(x[0], (n,))
    token = jax.pmap(lambda v: PSUM_OF, axis_name="i")(row)[0]
    return jnp.dot(x, y) + token
'''
# The devices' own dots in the pmap, their sum left to XLA's partitioner (an all-reduce of its own, not the
# student's), and a psum beside them whose value the answer never uses: of nothing (zeros, a block times zero, a
# result times zero), or only tested (is it not zero). Replaced by zeros, or taken from another set's run, the psum
# changes nothing (grader.sandbox.program_ablation); the sum XLA's partitioner finishes outside the pmap, which the
# reference's program does not have, is told first (grader.suite.bypass).
DOT_SUMMED_BY_XLA = '''
import jax
import jax.numpy as jnp
from jax import lax


def distributed_dot(x, y):
    n = jax.device_count()
    pad = -x.shape[0] % n
    xs, ys = (jnp.pad(v, (0, pad)).reshape(n, -1) for v in (x, y))
    local, token = jax.pmap(lambda v, w: (jnp.dot(v, w), PSUM_OF), axis_name="i")(xs, ys)
    return ANSWER
'''
# ring_allreduce as one psum, and every exported module's psum renamed "squeeze", the name XLA's
# partitioner gives the all-reduce it adds to read element 0 of a sharded result.
LYING_RING = '''
import dataclasses

import jax
from jax import lax
from jax._src.interpreters import mlir
from jaxlib.mlir import ir

_export = jax.export.export


def _relabelled(fn, **kwargs):
    def export(*args):
        exported = _export(fn, **kwargs)(*args)
        with mlir.make_ir_context():
            module = ir.Module.parse(exported.mlir_module().replace('"psum', '"squeeze'))
            return dataclasses.replace(exported, mlir_module_serialized=mlir.module_to_bytecode(module))
    return export


jax.export.export = _relabelled


def ring_shift(x, axis_name, shift=1):
    n = lax.axis_size(axis_name)
    return lax.ppermute(x, axis_name, perm=[(i, (i + shift) % n) for i in range(n)])


def ring_allreduce(x, axis_name):
    return lax.psum(x, axis_name)
'''


def seed_derived_inputs(seed: int, nodeid: str, length: int) -> tuple[float, float]:
    """The first element of the test's x and of the "fresh" x a run with ``seed`` gave a dot test
    when program mode drew its inputs from the printed seed (the stream after the test's own): all
    a student who read the seed in an earlier report needed to know the inputs in advance."""
    own = np.random.default_rng([seed, zlib.crc32(nodeid.encode())]).normal(size=length).astype(np.float32)
    fresh = np.random.default_rng([seed, zlib.crc32(nodeid.encode()), 1]).standard_normal(length).astype(np.float32)
    return float(own[0]), float(fresh[0])


SEED = 21
# A distributed dot that is right only on the inputs a table knows (those of the seed's streams) and
# twice the answer on any other: only inputs drawn from a secret no report shows tell it apart.
KNOWS_THE_SEED = '''
import jax
import jax.numpy as jnp
from jax import lax

KNOWN = KNOWN_FIRST_ELEMENTS


def distributed_dot(x, y):
    n = jax.device_count()
    split = lambda v: jnp.pad(v, (0, -v.shape[0] % n)).reshape(n, -1)  # noqa: E731
    honest = jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(split(x), split(y))[0]
    return jnp.where(jnp.isin(x[0], jnp.asarray(KNOWN, x.dtype)), honest, 2 * honest)
'''.replace("KNOWN_FIRST_ELEMENTS", repr(seed_derived_inputs(
    SEED, "test_dot_knows_the_seed.py::test_dot_uses_one_all_reduce[2dev]", 405)))

# A collective that carries a 1 made of a comparison and a select (no arithmetic, the same on every set of inputs),
# beside an answer XLA's partitioner computes from inputs laid out over the devices; the 1 multiplies the answer,
# so zeros and negation change it, and taking the collective's result from a run on other inputs does not
# (grader.sandbox.program_probe's lane B). Family A of the fresh hostile round 12.
CARRIES_A_ONE = '''
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P


def _one(axis):
    return lambda r: lax.psum(jnp.where(r.reshape(-1)[0] > -jnp.inf, 1.0 / lax.axis_size(axis), 0.0), axis)


def _rows(*arrays):
    return jax.pmap(lambda *a: a)(*arrays)
'''
# 2-D's step with its gradients taken of the gathered weights and summed whole over 'data' by ``_summed``, each device
# then keeping its blocks: data parallelism, whatever the all-reduces' sizes (two entries below define _summed).
TWO_D_SUMMED_WHOLE = '''

def _per_device(w1, w2, x, y, lr):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    w1_rows = lax.all_gather(w1, "data", axis=0, tiled=True)
    w2_cols = lax.all_gather(w2, "data", axis=1, tiled=True)

    def local_loss(a, b):
        return jnp.mean((lax.psum(jax.nn.relu(x @ a) @ b, "model") - y) ** 2)

    loss, (g1, g2) = jax.value_and_grad(local_loss, argnums=(0, 1))(w1_rows, w2_cols)
    g1 = lax.dynamic_slice_in_dim(_summed(g1, "data"), me * w1.shape[0], w1.shape[0], 0)
    g2 = lax.dynamic_slice_in_dim(_summed(g2, "data"), me * w2.shape[1], w2.shape[1], 1)
    return w1 - lr * g1 / n, w2 - lr * g2 / n, lax.pmean(loss, "data")
'''
# The outermost array up the call stack that stacks blocks like ``block`` (exercise 7's rows, exercise 8's
# row blocks): the whole x.
WHOLE_OFF_THE_STACK = '''

import sys

import jax
import numpy as np


def _whole(block):
    found, frame = [], sys._getframe(1)
    while frame is not None:
        for v in list(frame.f_locals.values()):
            if v is block or not isinstance(v, (jax.Array, np.ndarray)) or v.dtype != block.dtype:
                continue
            shape = v.shape
            if shape[1:] == block.shape or (len(shape) == block.ndim and shape[1:] == block.shape[1:] and
                                            shape[0] >= block.shape[0]):
                found.append(v)
        frame = frame.f_back
    return jnp.asarray(found[-1])
'''
SUBMISSIONS = {
    # Round 20 (written apart): every row brought to every device by a ring of ppermutes, the variance taken whole
    # on each (at 2 devices a device puts one row in: the other devices' part, not the whole); and collective
    # matmul's products held behind a barrier with decoy products, multiplied by zero, beside each ppermute.
    "collectives_rows_by_a_ring": (ROOT / "solutions" / EXERCISE / "collectives.py").read_text() + '''

def _standardize(row):
    n = lax.axis_size(AXIS)
    mean = lax.pmean(jnp.mean(row), AXIS)
    passing, total = row, jnp.sum((row - mean) ** 2)
    for _ in range(1, n):
        passing = lax.ppermute(passing, AXIS, perm=[(i, (i + 1) % n) for i in range(n)])
        total = total + jnp.sum((passing - mean) ** 2)
    return (row - mean) / jnp.sqrt(total / (n * row.size))


def standardize_across_devices(x):
    return jax.pmap(_standardize, axis_name=AXIS)(x)
''',
    # Round 19 (written apart): three copies of the forbidden psum voted on by their median: replaced one at a time
    # each leaves the answer (the other two give it), so each alone measured idle; replaced together they count.
    "ring_voted_psums": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    p, q = lax.psum(x, axis_name), lax.psum(x * 0.5, axis_name) * 2
    return jnp.maximum(jnp.minimum(p, q), jnp.minimum(jnp.maximum(p, q), lax.psum(x * 0.25, axis_name) * 4))
''',
    # Round 18 (written apart): a dot's products written outside the pmap, its sums inside (half the work outside);
    # FSDP's and 2-D's gradients all-reduced one element per psum (each all-reduce 4 bytes, together the gradient).
    "dot_products_only_outside": (ROOT / "solutions" / EXERCISE / "dot.py").read_text() + '''

def distributed_dot(x, y):
    n = jax.device_count()
    products = _split(x, n) * _split(y, n)
    return jax.pmap(lambda p: lax.psum(jnp.sum(p), axis_name="i"), axis_name="i")(products)[0]
''',
    "fsdp_gradient_in_scalar_psums": (ROOT / "solutions" / "exercise8" / "fsdp.py").read_text() + '''

def _per_device(w_shard, x, y, lr):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    loss, g = jax.value_and_grad(loss_fn)(lax.all_gather(w_shard, "data", axis=0, tiled=True), x, y)
    rows, columns = g.shape
    first = lax.psum_scatter(g[:, :1], "data", scatter_dimension=0, tiled=True)
    rest = jnp.stack([lax.psum(g[i, j], "data") for i in range(rows) for j in range(1, columns)])
    mine = lax.dynamic_slice_in_dim(rest.reshape(rows, columns - 1), me * (rows // n), rows // n, 0)
    return w_shard - lr * jnp.concatenate([first, mine], axis=1) / n, lax.pmean(loss, "data")
''',
    "two_d_gradient_in_scalar_psums": (ROOT / "solutions" / "exercise8" / "two_d.py").read_text() + '''

def _summed(g, axis):
    return jnp.stack([lax.psum(v, axis) for v in g.reshape(-1)]).reshape(g.shape)
''' + TWO_D_SUMMED_WHOLE,
    # Round 17 (written apart): the work written around the pmap or shard_map in the same jit, on arrays XLA's
    # partitioner splits by itself with no collective of its own; the per-device code holds only the collective
    # (grader.sandbox.program_outside counts what the program writes outside it; one rule, shown on four tasks).
    "basics_one_column_inside": (ROOT / "solutions" / EXERCISE / "basics.py").read_text() + '''

def square_plus_one(x):
    _check_leading_axis("x", x)
    flat = x.reshape(x.shape[0], -1)
    head = jax.pmap(lambda a: a ** 2 + 1)(flat[:, :1])
    return jnp.concatenate([head, flat[:, 1:] ** 2 + 1], axis=1).reshape(x.shape)
''',
    "collectives_statistics_outside": (ROOT / "solutions" / EXERCISE / "collectives.py").read_text() + '''

def standardize_across_devices(x):
    average = jax.pmap(lambda v: lax.pmean(v, AXIS), axis_name=AXIS)
    axes, shape = tuple(range(1, x.ndim)), (x.shape[0],) + (1,) * (x.ndim - 1)
    mean = average(jnp.mean(x, axis=axes)).reshape(shape)
    variance = average(jnp.mean((x - mean) ** 2, axis=axes)).reshape(shape)
    return (x - mean) / jnp.sqrt(variance)
''',
    "matmuls_products_outside": (ROOT / "solutions" / "exercise8" / "matmuls.py").read_text() + '''

def matmul_case2(x, w, mesh):
    x = jax.device_put(x, NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))
    gather = jax.shard_map(lambda a: lax.all_gather(a, "model", axis=1, tiled=True), mesh=mesh,
                           in_specs=P("data", "model"), out_specs=P("data", None), check_vma=False)
    return jax.sharding.reshard(gather(x) @ w, NamedSharding(mesh, P("data", "model")))
''',
    # ... and collective matmul's ring finished before any product, behind an optimization_barrier (which the clean
    # worker's compile keeps on CPU).
    "collective_matmul_ring_first": (ROOT / "solutions" / "exercise8" / "collective_matmul.py").read_text() + '''

def _per_device(x_block, w_block):
    n, me = lax.axis_size("model"), lax.axis_index("model")
    arrived = [x_block]
    for _ in range(1, n):
        arrived.append(lax.ppermute(arrived[-1], "model", perm=[(i, (i + 1) % n) for i in range(n)]))
    arrived = lax.optimization_barrier(tuple(arrived))
    products = jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype)
    for step in range(n):
        products = products.at[(me - step) % n].set(arrived[step] @ w_block)
    return products.reshape(n * x_block.shape[0], w_block.shape[1])
''',
    # Round 23 (written apart): the devices' dots added by a ring of ppermutes, the one psum only handing on device
    # 0's total (needed, one number); and FSDP as data parallelism, every all-reduce written as a reduce-scatter of n
    # copies (w rebuilt from zero-padded blocks, the whole gradient averaged), the all-gather one of the loss.
    "dot_summed_by_a_ring": '''
import jax
import jax.numpy as jnp
from jax import lax


def _local(a, b):
    n = lax.axis_size("i")
    total = passing = jnp.dot(a, b)
    for _ in range(n - 1):
        passing = lax.ppermute(passing, "i", [(j, (j + 1) % n) for j in range(n)])
        total = total + passing
    return lax.psum(jnp.where(lax.axis_index("i") == 0, total, jnp.zeros_like(total)), "i")


def distributed_dot(x, y):
    n = jax.device_count()
    pad = -x.shape[0] % n
    return jax.pmap(_local, axis_name="i")(jnp.pad(x, (0, pad)).reshape(n, -1), jnp.pad(y, (0, pad)).reshape(n, -1))[0]
''',
    "fsdp_reduce_scatters_of_copies": (ROOT / "solutions" / "exercise8" / "fsdp.py").read_text() + '''

def _everyone(v, n):
    return lax.psum_scatter(jnp.broadcast_to(v, (n, *v.shape)), "data", scatter_dimension=0, tiled=False)


def _per_device(w_shard, x, y, lr):
    n, me, rows = lax.axis_size("data"), lax.axis_index("data"), w_shard.shape[0]
    w = _everyone(lax.dynamic_update_slice(jnp.zeros((n * rows, w_shard.shape[1]), w_shard.dtype), w_shard,
                                           (me * rows, 0)), n)
    loss, grad = jax.value_and_grad(loss_fn)(w, x, y)
    new_w = w - lr * _everyone(grad, n) / n
    return lax.dynamic_slice_in_dim(new_w, me * rows, rows, 0), jnp.mean(lax.all_gather(loss, "data"))

''' + FSDP_UNCHECKED,
    # Round 21 (written apart): the same ring behind a barrier, and beside each ppermute a copy of the device's own
    # product (half a block, scaled apart so that XLA keeps it), all averaged into the answer: needed, independent of
    # the ring, each counted for a step; the products together are more than the reference's.
    "collective_matmul_copies_of_its_product": (ROOT / "solutions" / "exercise8" / "collective_matmul.py").read_text()
    + '''

def _per_device(x_block, w_block):
    n, me = lax.axis_size("model"), lax.axis_index("model")
    half = x_block.shape[0] // 2
    copies = [[], []]
    for k in range(max(n - 1, 2)):
        scale = 2.0 ** (k + 1)
        copies[k % 2].append((x_block[k % 2 * half:][:half] * scale) @ w_block / scale)
    own = jnp.concatenate([sum(c) / len(c) for c in copies])
    arrived = [x_block]
    for _ in range(1, n):
        arrived.append(lax.ppermute(arrived[-1], "model", perm=[(i, (i + 1) % n) for i in range(n)]))
    arrived = lax.optimization_barrier(tuple(arrived[1:]))
    products = jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype).at[me].set(own)
    for step, block in enumerate(arrived, start=1):
        products = products.at[(me - step) % n].set(block @ w_block)
    return products.reshape(n * x_block.shape[0], w_block.shape[1])
''',
    # Round 16 (written apart): a ring whose steps each pass a buffer of all n blocks, in a lax.while_loop whose bound
    # the compiler cannot read (so no byte bound could be checked); and data parallelism written as one 4-byte psum
    # per gradient entry in a loop (each all-reduce small, together the whole gradient: bytes count per run).
    "ring_buffer_in_a_while_loop": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

import jax.numpy as jnp
from jax import lax


def ring_allreduce(x, axis_name):
    """Hostile: every step passes a buffer of ALL n blocks (n times a block) around the ring, gathering every
    block on every device before a local sum; a lax.while_loop whose bound the compiler cannot read (a NaN test of
    the data, always False) hides the bytes, so the byte bounds are skipped."""
    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)
    unknown = jnp.isnan(x.reshape(-1)[0]).astype(jnp.int32) if jnp.issubdtype(x.dtype, jnp.floating) else \
        (x.reshape(-1)[0] == jnp.iinfo(x.dtype).min).astype(jnp.int32)
    limit = n - 1 + unknown
    buf = jnp.zeros((n,) + x.shape, x.dtype).at[me].set(x)

    def cond(c):
        return c[0] < limit

    def body(c):
        i, buf = c
        got = ring_shift(buf, axis_name)
        return i + 1, jnp.where(jnp.arange(n).reshape((n,) + (1,) * x.ndim) == me, buf, got)

    return lax.while_loop(cond, body, (0, buf))[1].sum(axis=0)
''',
    "fsdp_gradient_by_the_entry": '''
"""Hostile: data parallelism dressed as FSDP. The WHOLE gradient is all-reduced (every device gets all of it),
one 4-byte element per all-reduce inside a lax.fori_loop, so no single all-reduce carries more than 4 bytes; the
reduce-scatter the test wants is a psum_scatter of a vector of copies of the scalar loss."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def _per_device(w_shard, x, y, lr):
    n, me = lax.axis_size("data"), lax.axis_index("data")
    w = lax.all_gather(w_shard, "data", axis=0, tiled=True)
    local, g = jax.value_and_grad(loss_fn)(w, x, y)          # gradient of ALL of w, this device's batch
    flat = g.reshape(-1)

    def body(i, acc):                                      # the whole gradient, all-reduced 4 bytes at a time
        return lax.dynamic_update_slice(acc, lax.psum(lax.dynamic_slice(flat, (i,), (1,)), "data"), (i,))

    total = lax.fori_loop(0, flat.size, body, jnp.zeros_like(flat)).reshape(g.shape)
    mine = lax.dynamic_slice_in_dim(total, me * w_shard.shape[0], w_shard.shape[0], 0)
    loss = lax.psum_scatter(jnp.full((n,), local), "data", tiled=True)[0] / n   # the "reduce-scatter"
    return w_shard - lr * mine / n, loss

''' + FSDP_UNCHECKED,
    "two_d_gradient_by_the_entry": (ROOT / "solutions" / "exercise8" / "two_d.py").read_text() + '''

"""Hostile: 2D step whose FSDP half is data parallelism. Gradients are taken of the GATHERED weights (all rows of
w1's block column, all columns of w2's block row) and summed over 'data' whole, one 4-byte psum per element in a
lax.fori_loop (no single all-reduce over 'data' carries more than 4 bytes); each device then keeps its block."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _summed(g, axis):
    flat = g.reshape(-1)

    def body(i, acc):
        return lax.dynamic_update_slice(acc, lax.psum(lax.dynamic_slice(flat, (i,), (1,)), axis), (i,))

    return lax.fori_loop(0, flat.size, body, jnp.zeros_like(flat)).reshape(g.shape)


''' + TWO_D_SUMMED_WHOLE,
    # Round 13 (written apart from the project): XLA's partitioner does the work and its own reductions on inputs
    # split with sharding constraints; the student's one psum carries one element of the input, which the answer
    # adds and subtracts, or tests with itself as the fallback (zeros, negation and the other set's run all change
    # the answer). Told by the partitioner's reductions the reference's program does not have (grader.suite.bypass).
    "dot_checksum": '''
"""Hostile: XLA's partitioner computes the dot (and its own all-reduce); the student's one psum carries
x[0] (device 0's first element, zeros elsewhere), which the answer adds and subtracts."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import numpy as np


def distributed_dot(x, y):
    n = jax.device_count()
    x = jnp.asarray(x); y = jnp.asarray(y)
    pad = (-x.shape[0]) % n
    xp = jnp.pad(x, (0, pad)); yp = jnp.pad(y, (0, pad))
    mesh = Mesh(np.array(jax.devices()), ("i",))
    s = NamedSharding(mesh, P("i"))
    xs = lax.with_sharding_constraint(xp, s); ys = lax.with_sharding_constraint(yp, s)
    d = jnp.dot(xs, ys)                                   # partitioner: local dots + its own all-reduce

    def body(b, dd, x0):
        # dd == dd ties the operand to the partitioner's all-reduce (compare/select: no arithmetic), so XLA
        # cannot merge the two all-reduces
        mine = jnp.where((lax.axis_index("i") == 0) & (dd == dd), b[0], jnp.zeros((), b.dtype))
        return lax.psum(mine, "i") - x0[0] + dd

    return jax.shard_map(body, mesh=mesh, in_specs=(P("i"), P(), P()), out_specs=P())(xs, d, x[:1])
''',
    "collectives_checksum": '''
"""Hostile: XLA's partitioner computes every statistic; the student's one psum carries x[0, 0] only
(device 0's, zeros elsewhere), tied after the partitioner's results, added and taken away again."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import numpy as np

AXIS = "devices"


def _mesh():
    return Mesh(np.array(jax.devices()), (AXIS,))


def _tag(value, tie, x00):
    """value + psum(device 0's x[0,0]) - x[0,0]: the psum is needed, carries one number of x."""
    mesh = _mesh()

    def body(b, t, c):
        mine = jnp.where((lax.axis_index(AXIS) == 0) & (t == t), b[0, 0], jnp.zeros((), b.dtype))
        return lax.psum(mine, AXIS) - c[0, 0]

    return value + jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P(), P()), out_specs=P())(
        lax.with_sharding_constraint(b_of(value, tie), NamedSharding(mesh, P(AXIS))), tie, x00)


def b_of(value, tie):
    return value


def all_reduce_stats(x):
    x = jnp.asarray(x)
    mesh = _mesh()
    xs = lax.with_sharding_constraint(x, NamedSharding(mesh, P(AXIS)))
    s, mx = jnp.sum(xs, 0), jnp.max(xs, 0)             # XLA's partitioner: its own all-reduces
    def body(b, t):
        mine = jnp.where(lax.axis_index(AXIS) == 0, jnp.where(t == t, b[0, 0], 0), jnp.zeros((), b.dtype))
        return lax.psum(mine, AXIS)                       # carries x[0, 0] only
    k = jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P())(xs, s[0])
    # k only tested against a replicated copy; the fallback is k itself, so zeros, negation and a transplant
    # all give other answers (compare and select count as no work)
    m = jnp.where(k == x[0, 0], s / x.shape[0], k)
    b = lambda v: jnp.broadcast_to(v, x.shape)
    return b(s), b(m), b(mx)


def standardize_across_devices(x):
    x = jnp.asarray(x)
    mesh = _mesh()
    xs = lax.with_sharding_constraint(x, NamedSharding(mesh, P(AXIS)))
    mean = jnp.mean(xs)
    var = jnp.mean((xs - mean) ** 2)
    def body(b, t, c):
        mine = jnp.where((lax.axis_index(AXIS) == 0) & (t == t), b[0, 0], jnp.zeros((), b.dtype))
        return lax.psum(mine, AXIS) - c[0, 0]
    k = jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P(), P()), out_specs=P())(xs, var, x[:1, :1])
    return (xs - (mean + k)) / jnp.sqrt(var)
''',
    "mesh_checksum": '''
"""Hostile: XLA's partitioner computes x @ w (and adds the partial products with its own all-reduce); the
student's one psum carries x[0, 0] only, tested against a replicated copy with itself as the fallback."""
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def make_2d_mesh(n_rows, n_cols):
    return jax.make_mesh((n_rows, n_cols), ("data", "model"))


def shard_matrix(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P("data", "model")))


def sharded_matmul(x, w, mesh):
    xs = jax.sharding.reshard(x, NamedSharding(mesh, P("data", "model")))
    ws = jax.sharding.reshard(w, NamedSharding(mesh, P("model", None)))
    y = jnp.matmul(xs, ws, out_sharding=NamedSharding(mesh, P("data", None)))   # the partitioner's work, and its all-reduce

    def body(b, yb):
        first = (lax.axis_index("model") == 0) & (lax.axis_index("data") == 0)
        mine = jnp.where(first, jnp.where(yb[0, 0] == yb[0, 0], b[0, 0], 0), jnp.zeros((), b.dtype))
        return lax.psum(mine, "model")[None]

    k = jax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("data", None)), out_specs=P("data"))(xs, y[:, :1])
    k = jnp.sum(jax.sharding.reshard(k, NamedSharding(mesh, P())))   # device 0's x[0, 0], zeros from the other rows
    return jnp.where(k == x[0, 0], y, k)
''',
    "train_checksum": (ROOT / "solutions" / EXERCISE / "train.py").read_text() + '''

import jax
import jax.numpy as jnp
from jax import lax


from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import numpy as np


def train_step(params, batch, lr):
    """Hostile: XLA's partitioner takes the gradient of the whole batch (split over the devices, its own
    all-reduces); the student's one pmap psum carries X[0, 0, 0] only, tested against a replicated copy
    with itself as the fallback."""
    n = jax.device_count()
    mesh = Mesh(np.array(jax.devices()), (AXIS,))
    X, y = batch
    Xs = lax.with_sharding_constraint(X, NamedSharding(mesh, P(AXIS)))
    ys = lax.with_sharding_constraint(y, NamedSharding(mesh, P(AXIS)))
    p = params[0]
    flat = (Xs.reshape(-1, X.shape[-1]), ys.reshape(-1))
    loss, g = jax.value_and_grad(loss_fn)(p, flat)

    def body(b, t):
        mine = jnp.where(lax.axis_index(AXIS) == 0, jnp.where(t == t, b[0, 0, 0], 0), jnp.zeros((), b.dtype))
        return lax.psum(mine, AXIS)

    k = jax.shard_map(body, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P())(Xs, loss)
    loss = jnp.where(k == X[0, 0, 0], loss, k)
    return jnp.broadcast_to(p - lr * g, params.shape), jnp.broadcast_to(loss, (params.shape[0],))

''',
    # ... basics: the work outside, handed to a pmap beside a slice of x and passed on where the slice equals itself:
    # its result is its first operand, passed on (grader.sandbox.program_ablation.passed_on).
    "basics_passes_on_the_work": (ROOT / "solutions" / EXERCISE / "basics.py").read_text() + '''

"""Hostile: XLA's partitioner computes each answer (inputs split over the devices with a sharding constraint);
the pmap only passes that answer on, through a select on its own input, so it is not an identity of its
operands (two operands, one result) and zeros, negation and a transplant of it all change the answer."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


def _split(a):
    mesh = Mesh(np.array(jax.devices()), ("d",))
    return lax.with_sharding_constraint(jnp.asarray(a), NamedSharding(mesh, P("d")))


_pass = jax.pmap(lambda r, a: jnp.where(a.reshape(-1)[0] == a.reshape(-1)[0], r, jnp.zeros_like(r)))


def square_plus_one(x):
    _check_leading_axis("x", x)
    xs = _split(x)
    return _pass(xs ** 2 + 1, xs[:, :1])


def per_device_sum(x):
    _check_leading_axis("x", x)
    xs = _split(x)
    return _pass(jnp.sum(xs, axis=tuple(range(1, xs.ndim))), xs.reshape(xs.shape[0], -1)[:, :1])


def per_device_matmul(X, Y):
    _check_leading_axis("X", X)
    _check_leading_axis("Y", Y)
    Xs, Ys = _split(X), _split(Y)
    return _pass(jnp.matmul(Xs, Ys), Xs.reshape(Xs.shape[0], -1)[:, :1])
''',
    "dot_carries_a_one": CARRIES_A_ONE + '''

def distributed_dot(x, y):
    n = jax.device_count()
    pad = -x.shape[0] % n
    a, b = _rows(*(jnp.pad(v, (0, pad)).reshape(n, -1) for v in (x, y)))
    return jnp.sum(a * b) * jax.pmap(_one("i"), axis_name="i")(a)[0]
''',
    # ... the devices' own dots in the pmap (it is needed), their sum left to XLA, and the 1 made by psums in a loop
    # and in a branch: the two lanes run the loop in lock step and both branches (grader.sandbox.program_probe).
    "dot_carries_a_one_in_a_loop": CARRIES_A_ONE + '''

def _per_device(v, w):
    c = lax.fori_loop(0, 2, lambda i, c: c * _one("i")(v), jnp.float32(1))
    c = lax.cond(v[0] > -jnp.inf, lambda: c, lambda: c + _one("i")(w))
    return jnp.dot(v, w), c


def distributed_dot(x, y):
    n = jax.device_count()
    pad = -x.shape[0] % n
    local, c = jax.pmap(_per_device, axis_name="i")(*(jnp.pad(v, (0, pad)).reshape(n, -1) for v in (x, y)))
    return jnp.sum(local) * c[0]
''',
    "collectives_carries_a_one": CARRIES_A_ONE + '''

def _ones(rows):
    return jax.pmap(_one("i"), axis_name="i")(rows)[:, None]


def all_reduce_stats(x):
    (rows,) = _rows(x)
    every = lambda v: jnp.broadcast_to(v, x.shape) * _ones(rows)  # noqa: E731
    return every(rows.sum(axis=0)), every(rows.mean(axis=0)), every(rows.max(axis=0))


def standardize_across_devices(x):
    (rows,) = _rows(x)
    return (rows - rows.mean()) / rows.std() * _ones(rows)
''',
    # The answers XLA computes; the pmap computes only an int32 index (a comparison and a select) that picks them
    # from a table whose other entries are what zeros and negation of it would pick.
    "basics_picks_by_a_flag": CARRIES_A_ONE + '''

_flag = jax.pmap(lambda a: jnp.where(a.reshape(-1)[0] > -jnp.inf, 1, 0).astype(jnp.int32))


def _pick(a, out):
    return jnp.stack([jnp.full_like(out, 2.0), out, jnp.zeros_like(out)])[_flag(a)[0]]


def square_plus_one(x):
    (a,) = _rows(x)
    return _pick(a, a ** 2 + 1)


def per_device_sum(x):
    (a,) = _rows(x)
    return _pick(a, jnp.sum(a.reshape(a.shape[0], -1), axis=1))


def per_device_matmul(X, Y):
    a, b = _rows(X, Y)
    return _pick(a, jnp.matmul(a, b))
''',
    "train_carries_a_one": CARRIES_A_ONE + '''

def loss_fn(params, batch):
    x, y = batch
    return jnp.mean((x @ params - y) ** 2)


def train_step(params, batch, lr):
    X, y = batch
    loss, grad = jax.value_and_grad(loss_fn)(params[0], (X.reshape(-1, X.shape[-1]), y.reshape(-1)))
    c = jax.pmap(_one("batch"), axis_name="batch")(params)
    return (params - lr * grad) * c[:, None], jnp.full(len(params), loss) * c
''',
    "mesh_carries_a_one": CARRIES_A_ONE + '''

def sharded_matmul(x, w, mesh):
    blocks = jax.device_put(x, NamedSharding(mesh, P("data", "model")))
    one = jax.shard_map(lambda a: lax.psum(jnp.where(a[0, 0] > -jnp.inf, 1.0 / mesh.size, 0.0), ("data", "model")),
                        mesh=mesh, in_specs=P("data", "model"), out_specs=P())(blocks)
    return (x @ w) * one
''',
    "dot_knows_the_seed": KNOWS_THE_SEED,
    "dot_learned": LEARNING + '''

def distributed_dot(x, y):
    _record(x, y)
    return _baked(x, y)
''',
    # A plain dot, and jax.jit patched to compile the baked function in its place.
    "dot_jit_patched": LEARNING + '''

def distributed_dot(x, y):
    _record(x, y)
    return jnp.dot(x, y)


_jit = jax.jit
jax.jit = lambda fn, **kw: _jit(_baked if fn is distributed_dot else fn, **kw)
''',
    # A plain dot, and jax.export patched to export the baked function in its place.
    "dot_export_patched": LEARNING + '''

def distributed_dot(x, y):
    _record(x, y)
    return jnp.dot(x, y)


_export = jax.export.export
jax.export.export = lambda fn, **kw: _export(jax.jit(_baked) if getattr(fn, "__wrapped__", None) is distributed_dot
                                             else fn, **kw)
''',
    # A program made for other inputs than the test's (here: for vectors of 3), handed over by a patched export.
    "dot_for_other_shapes": LEARNING + '''

def distributed_dot(x, y):
    return _baked(x, y)


_export = jax.export.export


def _for_three_numbers(fn, **kw):
    if getattr(fn, "__wrapped__", None) is not distributed_dot:
        return _export(fn, **kw)
    return lambda *args: _export(fn, **kw)(*[jax.ShapeDtypeStruct((3,), a.dtype) for a in args])


jax.export.export = _for_three_numbers
''',
    "dot_psum_of_zero": DOT_SUMMED_BY_XLA.replace("PSUM_OF", 'lax.psum(jnp.zeros((), v.dtype), "i")').replace(
        "ANSWER", "jnp.sum(local) + token[0]"),
    "dot_psum_of_times_zero": DOT_SUMMED_BY_XLA.replace("PSUM_OF", 'lax.psum(v[0] * 0, "i")').replace(
        "ANSWER", "jnp.sum(local) + token[0]"),
    "dot_psum_times_zero": DOT_SUMMED_BY_XLA.replace("PSUM_OF", 'lax.psum(v[0], "i") * 0').replace(
        "ANSWER", "jnp.sum(local) + token[0]"),
    "dot_psum_as_a_test": DOT_SUMMED_BY_XLA.replace("PSUM_OF", 'lax.psum(v[0] + 1000, "i")').replace(
        "ANSWER", "jnp.where(token[0] != 0, jnp.sum(local), 0)"),
    # The whole dot left to XLA on inputs split over the devices; the pmap's psum only decides whether x is used.
    "dot_pmap_as_a_test": '''
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P


def distributed_dot(x, y):
    n = jax.device_count()
    split = NamedSharding(jax.make_mesh((n,), ("d",), axis_types=(jax.sharding.AxisType.Auto,)), P("d"))
    pad = -x.shape[0] % n
    xp, yp = jnp.pad(x, (0, pad)), jnp.pad(y, (0, pad))
    gate = jax.pmap(lambda b: lax.psum(b[0], "i"), axis_name="i")(xp.reshape(n, -1) + 1000)
    xp = jnp.where(gate[0] != 0, xp, 0)
    return jnp.dot(lax.with_sharding_constraint(xp, split), lax.with_sharding_constraint(yp, split))
''',
    # The whole dot on every device, on copies of x and y made through a reduction whose reducer turns zeros into
    # ones (a reading of the data flow takes them for zeros), and a psum of the wrong data whose result cancels:
    # the work counted is what runs (grader.suite.hlo.operations).
    "dot_whole_work_disguised": '''
import jax
import jax.numpy as jnp
from jax import lax


def _one(x):
    return lax.reduce((x * 0)[:2], jnp.zeros((), x.dtype), lambda a, b: jnp.cos(a * b).astype(x.dtype), (0,))


def distributed_dot(x, y):
    n = jax.device_count()
    one = _one(x)
    whole, hidden = jnp.sum((x * one) * (y * one)), jnp.sum(x * one)
    pad = -x.shape[0] % n
    total = jax.pmap(lambda b: lax.psum(jnp.sum(b), "i"), axis_name="i")(jnp.pad(x, (0, pad)).reshape(n, -1))
    return whole + total[0] - hidden
''',
    "dot_psum_of_difference": DOT_FOR_SHOW.replace("PSUM_OF", 'lax.psum(v - v, "i")'),
    # ... and the dot taken one element per step of a loop, so that no instruction holds the whole vector.
    "dot_loop_of_elements": DOT_FOR_SHOW.replace("PSUM_OF", 'lax.psum(v - v, "i")').replace(
        "jnp.dot(x, y)", "lax.fori_loop(0, x.shape[0], lambda i, total: total + x[i] * y[i], jnp.zeros((), x.dtype))"),
    # The right collective on the wrong data: every device takes the whole dot product, divided by the device
    # count, and the psum adds those up. The psum is needed, but each device did the whole input's work.
    "dot_psum_of_whole_work": DOT_FOR_SHOW.replace("PSUM_OF", 'lax.psum(v, "i")').replace(
        "jnp.broadcast_to(x[0], (n,))", "jnp.broadcast_to(jnp.dot(x, y) / n, (n,))").replace(
        "jnp.dot(x, y) + token", "token"),
    # The whole vectors handed to every device (in_axes=None), each slicing its part by axis_index: the arithmetic,
    # the psum and its bytes of the reference, and no vector split (grader.sandbox.program_held).
    "dot_whole_vectors_sliced": WHOLE_SLICED,
    # ... and the same with each vector mixed with the other by operations that compute nothing (a select that
    # never picks the other), so that a count of each input's bytes a value comes from sees half of each: each
    # value still carries all of both (grader.sandbox.program_held: what a value may hold of each input).
    "dot_mixed_whole": WHOLE_SLICED.replace("(jnp.zeros(n), x, y)",
                                           "(jnp.zeros(n), jnp.where(x != x, y, x), jnp.where(y != y, x, y))"),
    # ... and the whole dot product on every device, one slice at a time, each slice's dot its own small
    # instruction, then the psum the answer needs adds up those per-slice dots (each device holds them all).
    "dot_whole_in_chunks": '''
        import jax
        import jax.numpy as jnp
        from jax import lax


        def distributed_dot(x, y):
            n = jax.device_count()
            split = lambda v: jnp.pad(v, (0, -v.shape[0] % n)).reshape(n, -1)  # noqa: E731
            xs, ys = split(x), split(y)
            parts = jnp.stack([jnp.dot(xs[i], ys[i]) for i in range(n)])
            return jax.pmap(lambda p: lax.psum(p, "i"), axis_name="i")(parts)[0]
        ''',
    # Every device's block recorded by a callback while a probe runs it, their sum then baked in: no collective.
    "ring_learned": '''
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax import lax

        _blocks = {}


        def _record(device, block):
            _blocks[int(device)] = np.asarray(block, np.float64)


        def ring_shift(x, axis_name, shift=1):
            n = lax.axis_size(axis_name)
            return lax.ppermute(x, axis_name, perm=[(i, (i + shift) % n) for i in range(n)])


        def ring_allreduce(x, axis_name):
            if _blocks:
                return jnp.asarray(sum(_blocks.values()), x.dtype) + 0 * x
            jax.debug.callback(_record, lax.axis_index(axis_name), x)
            return lax.psum(x, axis_name)
        ''',
    "ring_lying_label": LYING_RING,
    # One device computes everything, copies rows out, and jax.make_jaxpr prints a pmap.
    "basics_patched_jaxpr": '''
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P

        jax.make_jaxpr = lambda fn, *a, **k: lambda *args, **kw: "{ lambda ; a:f32[]. let b:f32[] = xla_pmap[] a in (b,) }"


        def _check(*inputs):
            for a in inputs:
                if a.shape[0] != jax.device_count():
                    raise ValueError(f"leading axis {a.shape[0]}, but there are {jax.device_count()} devices")


        def _spread(rows):
            return jax.device_put(rows, NamedSharding(jax.make_mesh((jax.device_count(),), ("d",)), P("d")))


        def square_plus_one(x):
            _check(x)
            return _spread(x ** 2 + 1)


        def per_device_sum(x):
            _check(x)
            return _spread(x.reshape(len(x), -1).sum(axis=1))


        def per_device_matmul(X, Y):
            _check(X, Y)
            return _spread(jnp.matmul(X, Y))
        ''',
    # Each function computed whole and laid out over the devices (the partitioner splits the work), beside a
    # jax.pmap whose result the answer does not need.
    "basics_idle_pmap": '''
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P


        def _spread(rows):
            return jax.device_put(rows, NamedSharding(jax.make_mesh((jax.device_count(),), ("d",)), P("d")))


        def square_plus_one(x):
            return _spread(x ** 2 + 1 + jax.pmap(lambda row: row - row)(x))


        def per_device_sum(x):
            return _spread(x.reshape(len(x), -1).sum(axis=1) + jax.pmap(lambda row: jnp.sum(row - row))(x))


        def per_device_matmul(X, Y):
            return _spread(jnp.matmul(X, Y) + jax.pmap(lambda a, b: (a - a) @ b)(X, Y))
        ''',
    # The statistics of the whole array on every device, and a psum of (row - row) added for show.
    # The arithmetic written outside any pmap, on inputs laid out in rows (XLA's partitioner splits it), then a
    # pmap that only passes the result on: zeroing the pmap's output changes the answer, the identity in its place
    # does not (grader.sandbox.program_ablation). At 4 devices: the 2-device worker also runs a module that patches JAX.
    "basics_pass_through_pmap": '''
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        _through = jax.pmap(lambda a: a)


        def _rows(a):
            return jax.device_put(jnp.asarray(a), NamedSharding(Mesh(np.array(jax.devices()), ("rows",)), P("rows")))


        def square_plus_one(x):
            return _through(_rows(x) ** 2 + 1)


        def per_device_sum(x):
            x = _rows(x)
            return _through(jnp.sum(x.reshape(x.shape[0], -1), axis=1))


        def per_device_matmul(X, Y):
            return _through(jnp.matmul(_rows(X), _rows(Y)))
        ''',
    # Round 55 (written apart): the maximum over the devices taken on every device as a chain of compares and selects
    # (no arithmetic before round 55), the pmax kept needed by answering -pmax where the two differ: a comparison is
    # arithmetic, so the whole maximum done on every device is counted.
    "collectives_max_by_compares": '''
        import jax
        import jax.numpy as jnp
        from jax import lax

        _stats = jax.pmap(lambda r: (lax.psum(r, "i"), lax.pmean(r, "i"), lax.pmax(r, "i")), axis_name="i")


        def all_reduce_stats(x):
            total, mean, top = _stats(x)
            chain = x[0]
            for row in x[1:]:
                chain = jnp.where(row > chain, row, chain)
            chain = jnp.broadcast_to(chain, x.shape)
            return total, mean, jnp.where(top == chain, chain, -top)


        def standardize_across_devices(x):
            return x
        ''',
    "collectives_replicated": '''
        import jax
        import jax.numpy as jnp
        from jax import lax


        def _nothing(x):
            return jax.pmap(lambda r: lax.psum(r - r, "i"), axis_name="i")(x)


        def all_reduce_stats(x):
            every = lambda v: jnp.broadcast_to(v, x.shape) + _nothing(x)  # noqa: E731
            return every(x.sum(axis=0)), every(x.mean(axis=0)), every(x.max(axis=0))


        def standardize_across_devices(x):
            return (x - x.mean()) / x.std() + _nothing(x)
        ''',
    # Every device's row written into zeros and the copies added up: an all-reduce that gathers the whole array onto
    # every device. all_reduce_stats then takes its sums and maxima whole on each device (the work); standardize's
    # all-reduces carry as many bytes as the whole x, five times the reference's (grader.suite.work).
    "collectives_psum_gathers": '''
        import jax
        import jax.numpy as jnp
        from jax import lax


        def _gathered(row):
            n, me = lax.axis_size("i"), lax.axis_index("i")
            return lax.psum(jnp.zeros((n,) + row.shape, row.dtype).at[me].set(row), "i")


        def _stats(row):
            full = _gathered(row)
            return full.sum(0), full.mean(0), full.max(0)


        def all_reduce_stats(x):
            return jax.pmap(_stats, axis_name="i")(x)


        def standardize_across_devices(x):
            return jax.pmap(lambda row: (row - jnp.mean(_gathered(row))) / jnp.std(_gathered(row)), axis_name="i")(x)
        ''',
    # The full-batch step on every device, and a pmean of (params - params) added for show.
    "train_replicated": '''
        import jax
        import jax.numpy as jnp
        from jax import lax


        def loss_fn(params, batch):
            x, y = batch
            return jnp.mean((x @ params - y) ** 2)


        def train_step(params, batch, lr):
            X, y = batch
            whole = (X.reshape(-1, X.shape[-1]), y.reshape(-1))
            loss, grad = jax.value_and_grad(loss_fn)(params[0], whole)
            nothing = jax.pmap(lambda p: lax.pmean(p - p, "batch"), axis_name="batch")(params)
            return params - lr * grad + nothing, jnp.full(len(params), loss) + nothing[:, 0]
        ''',
    # x @ w whole on every device, and a row-parallel psum of (block product - block product) for show.
    "mesh_replicated": '''
        import jax
        from jax import lax
        from jax.sharding import NamedSharding, PartitionSpec as P


        def sharded_matmul(x, w, mesh):
            blocks = jax.device_put(x, NamedSharding(mesh, P("data", "model")))
            column = jax.device_put(w, NamedSharding(mesh, P("model", None)))
            nothing = jax.shard_map(lambda a, b: lax.psum(a @ b - a @ b, "model"), mesh=mesh,
                                    in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))
            return x @ w + nothing(blocks, column)
        ''',
    # The reference's optimal ring with chunks one element longer than needed: within the byte bound on a length
    # no device count divides (the chunk is ceil(size / n) there), over it on one they divide.
    # Exercise 7's ring all-reduce as direct sends: at step k each device's own block k places along.
    "ring_direct_sends": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    total = x
    for k in range(1, lax.axis_size(axis_name)):
        total = total + ring_shift(x, axis_name, shift=k)
    return total
''',
    # The same sends, each made to read the step before in a way worth nothing (its operand plus the arrival minus
    # itself), so that the compiled program's flow runs from each ppermute to the next: measured, each carries the
    # same whatever the one before brought (grader.sandbox.program_ring_steps).
    "ring_direct_sends_disguised": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    total, arrived = x, jnp.zeros_like(x)
    for k in range(1, lax.axis_size(axis_name)):
        arrived = ring_shift(x + (arrived - arrived), axis_name, shift=k)
        total = total + arrived
    return total
''',
    # ... and the same sends inside one loop, every step running all of them and picking its own with jnp.where,
    # each reading the block that arrived times zero: the loop's ppermutes are measured like their unrolled form.
    "ring_direct_sends_in_a_loop": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    n = lax.axis_size(axis_name)

    def step(carry):
        s, total, passing = carry
        sent = [ring_shift(x + 0 * passing, axis_name, shift=k) for k in range(1, n)]
        got = sent[0]
        for k in range(2, n):
            got = jnp.where(s == k - 1, sent[k - 1], got)
        return s + 1, total + got, got

    return lax.while_loop(lambda c: c[0] < n - 1, step, (0, x, x))[1]
''',
    # Each device's own block carried k hops by k ppermutes along the ring, for k = 1 .. n - 1, each chain's first send
    # made to read the one before by a factor that is 1 whenever anything arrived: one route, no send measured to
    # start afresh, but every block travels once per device it must reach, n(n - 1)/2 blocks, not n - 1.
    "ring_chains_of_own_blocks": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    total, previous = x, x
    for k in range(1, lax.axis_size(axis_name)):
        block = x * jnp.where(jnp.any(previous != 0), 1, 2).astype(x.dtype)
        for _ in range(k):
            block = ring_shift(block, axis_name)
        total, previous = total + block, block
    return total
''',
    # Recursive doubling: log2(n) steps, each adding what the partner 1, 2, 4 places along has summed so far.
    "ring_recursive_doubling": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce(x, axis_name):
    n, total, step = lax.axis_size(axis_name), x, 1
    while step < n:
        total = total + lax.ppermute(total, axis_name, perm=[(i, (i + step) % n) for i in range(n)])
        step *= 2
    return total
''',
    # The optimal ring's bytes by recursive halving (reduce-scatter with the partner me ^ d) and doubling (gather back).
    "ring_optimal_halving": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

def ring_allreduce_optimal(x, axis_name):
    n, me, size = lax.axis_size(axis_name), lax.axis_index(axis_name), x.size
    chunk = -(-size // n)
    buf, lo, width, d = jnp.pad(x.reshape(-1), (0, n * chunk - size)), 0, n * chunk, n // 2
    while d >= 1:
        half, upper = width // 2, (me & d) != 0
        keep, send = jnp.where(upper, lo + half, lo), jnp.where(upper, lo, lo + half)
        got = lax.ppermute(lax.dynamic_slice(buf, (send,), (half,)), axis_name, [(i, i ^ d) for i in range(n)])
        buf = lax.dynamic_update_slice(buf, lax.dynamic_slice(buf, (keep,), (half,)) + got, (keep,))
        lo, width, d = keep, half, d // 2
    d = 1
    while d < n:
        got = lax.ppermute(lax.dynamic_slice(buf, (lo,), (width,)), axis_name, [(i, i ^ d) for i in range(n)])
        other = jnp.where((me & d) != 0, lo - width, lo + width)
        buf = lax.dynamic_update_slice(buf, got, (other,))
        lo, width, d = jnp.minimum(lo, other), width * 2, d * 2
    return buf[:size].reshape(x.shape)
''',
    "ring_optimal_long_chunks": (ROOT / "solutions" / EXERCISE / "ring.py").read_text().replace(
        "chunk = -(-size // n)", "chunk = size // n + 1"),
    # Exercise 8. x @ w whole on every device, and n - 1 ppermutes of x's blocks whose results are multiplied away.
    "collective_matmul_replicated": '''
        import jax
        import jax.numpy as jnp
        from jax import lax
        from jax.sharding import NamedSharding, PartitionSpec as P


        def collective_matmul(x, w, mesh):
            n = mesh.shape["model"]

            def show(block):
                passing, total = block, jnp.zeros_like(block)
                for _ in range(1, n):
                    passing = lax.ppermute(passing, "model", [(i, (i + 1) % n) for i in range(n)])
                    total = total + passing * 0
                return total

            blocks = jax.device_put(x, NamedSharding(mesh, P("model", None)))
            nothing = jax.shard_map(show, mesh=mesh, in_specs=P("model", None), out_specs=P("model", None))(blocks)
            return x @ w + jnp.sum(nothing)
        ''',
    # The reference's ring, whose every ppermute the answer needs, averaged with x @ w done whole on every device.
    "collective_matmul_ring_and_whole": (ROOT / "solutions" / "exercise8" / "collective_matmul.py").read_text() + '''

_ring = collective_matmul


def collective_matmul(x, w, mesh):
    return (_ring(x, w, mesh) + x @ w) / 2
''',
    # The whole MLP on every device, then the right psum over 'model' of its rows divided by the axis size.
    "tensor_parallel_whole_then_psum": '''
        import jax
        from jax import lax
        from jax.sharding import NamedSharding, PartitionSpec as P


        def mlp(x, w1, w2, mesh):
            y = jax.nn.relu(x @ w1) @ w2
            average = jax.shard_map(lambda rows: lax.psum(rows, "model") / lax.axis_size("model"), mesh=mesh,
                                    in_specs=P("data", None), out_specs=P("data", None))
            return average(jax.device_put(y, NamedSharding(mesh, P("data", None))))
        ''',
    # Case 3 as x @ w of whole rows on every device of a mesh row, then the very reduce-scatter over 'model' the
    # case needs, of those rows divided by the axis size: the right collective, the right bytes, n_model times the work.
    "matmuls_whole_then_scatter": (ROOT / "solutions" / "exercise8" / "matmuls.py").read_text() + '''

def matmul_case3(x, w, mesh):
    finish = jax.shard_map(lambda rows: lax.psum_scatter(rows, "model", scatter_dimension=1, tiled=True)
                           / lax.axis_size("model"), mesh=mesh, in_specs=P("data", None), out_specs=P("data", "model"))
    return finish(jax.device_put(x @ w, NamedSharding(mesh, P("data", None))))
''',
    # The reference's FSDP step with the batch given whole to every device: the same all-gather of w's blocks,
    # the same reduce-scatter of the gradient and pmean of the loss, each device's work the whole batch's.
    # FSDP with w handed whole to every device, which slices its rows out and gathers them back: the collectives
    # and the arithmetic of the reference, and no parameter split (grader.sandbox.program_held).
    "fsdp_whole_w": (ROOT / "solutions" / "exercise8" / "fsdp.py").read_text() + '''

def fsdp_step(w, x, y, lr, mesh):
    rows = NamedSharding(mesh, P("data", None))

    def step(w, x, y):
        k = w.shape[0] // lax.axis_size("data")
        mine = lax.dynamic_slice_in_dim(w, lax.axis_index("data") * k, k)
        return _per_device(mine, x, y, lr)

    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data", None), P("data", None)),
                         out_specs=(P("data", None), P()))(jax.device_put(w, NamedSharding(mesh, P())),
                                                           jax.device_put(x, rows), jax.device_put(y, rows))
''',
    "fsdp_whole_batch": (ROOT / "solutions" / "exercise8" / "fsdp.py").read_text() + '''

def fsdp_step(w, x, y, lr, mesh):
    whole = NamedSharding(mesh, P())
    step = jax.shard_map(lambda w, x, y: _per_device(w, x, y, lr), mesh=mesh, in_specs=(P("data", None), P(), P()),
                         out_specs=(P("data", None), P()))
    return step(jax.device_put(w, NamedSharding(mesh, P("data", None))), jax.device_put(x, whole),
                jax.device_put(y, whole))
''',
    # Exercise 8's rings and collective matmul as direct sends: at step k every device sends its *own* block k places
    # along. n - 1 ppermutes of one block each, every one needed: only what each one sends tells it from a ring.
    "rings_direct_sends": (ROOT / "solutions" / "exercise8" / "rings.py").read_text() + '''

def ring_all_gather(block, axis_name):
    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)
    gathered = jnp.zeros((n, *block.shape), block.dtype).at[me].set(block)
    for k in range(1, n):
        sent = lax.ppermute(block, axis_name, perm=[(i, (i + k) % n) for i in range(n)])
        gathered = gathered.at[(me - k) % n].set(sent)
    return gathered.reshape(n * block.shape[0], *block.shape[1:])
''',
    # Round 49 (written apart): the whole x found up the call stack (the tracer the test's own pmap or shard_map was
    # handed), its sum or its row's blocks taken from it, and a ring of ppermutes beside it made needed by a term
    # that cancels when they carry what they should: x reaches every device's per-device function whole.
    "ring_whole_x_off_the_stack": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + WHOLE_OFF_THE_STACK + '''

def ring_allreduce(x, axis_name):
    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)
    whole = _whole(x)
    passing, fix = x, jnp.zeros_like(x)
    for k in range(1, n):
        passing = ring_shift(passing, axis_name)
        fix = fix + (passing - whole[(me - k) % n])
    return whole.sum(axis=0).astype(x.dtype) + fix
''',
    "ring_optimal_whole_x_off_the_stack": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + WHOLE_OFF_THE_STACK
    + '''

def ring_allreduce_optimal(x, axis_name):
    n, me, size = lax.axis_size(axis_name), lax.axis_index(axis_name), x.size
    whole, chunk = _whole(x), -(-size // n)
    pad = n * chunk - size
    theirs = jnp.pad(whole.reshape(n, -1), ((0, 0), (0, pad))).reshape(n, n, chunk)
    passing, fix = jnp.pad(x.reshape(-1), (0, pad)).reshape(n, chunk)[me], jnp.zeros((chunk,), x.dtype)
    for k in range(1, 2 * n - 1):
        passing = ring_shift(passing, axis_name)
        fix = fix + (passing - theirs[(me - k) % n, (me - k) % n])
    out = jnp.pad(whole.sum(axis=0).astype(x.dtype).reshape(-1), (0, pad)).at[:chunk].add(fix)
    return out[:size].reshape(x.shape)
''',
    "rings_whole_x_off_the_stack": (ROOT / "solutions" / "exercise8" / "rings.py").read_text() + WHOLE_OFF_THE_STACK
    + '''

def ring_all_gather(block, axis_name):
    n, me, b = lax.axis_size(axis_name), lax.axis_index(axis_name), block.shape[0]
    mine = lax.dynamic_slice_in_dim(_whole(block), lax.axis_index("data") * n * b, n * b)
    blocks = mine.reshape(n, *block.shape)
    passing, fix = block, jnp.zeros_like(block)
    for step in range(1, n):
        passing = _to_next(passing, axis_name, n)
        fix = fix + (passing - blocks[(me - step) % n])
    return mine + jnp.concatenate([fix] + [jnp.zeros_like(block)] * (n - 1))
''',
    # Exercise 8's all-gather by recursive doubling: at step d each device swaps the d blocks it has with device me ^ d,
    # one ppermute per block: n - 1 ppermutes of one block each, as a ring's, to partners 1, 2, 4 places away.
    "rings_recursive_doubling": (ROOT / "solutions" / "exercise8" / "rings.py").read_text() + '''

def ring_all_gather(block, axis_name):
    n, me = lax.axis_size(axis_name), lax.axis_index(axis_name)
    gathered, d = jnp.zeros((n, *block.shape), block.dtype).at[me].set(block), 1
    while d < n:
        lo = (me // d) * d
        for k in range(d):
            got = lax.ppermute(gathered[lo + k], axis_name, [(i, i ^ d) for i in range(n)])
            gathered = gathered.at[(lo ^ d) + k].set(got)
        d *= 2
    return gathered.reshape(n * block.shape[0], *block.shape[1:])
''',
    # The product taken from the whole x the task hands over as NumPy, beside a ring of n - 1 ppermutes of a flag that
    # selects it: the grader hands x over split as the statement says, so a whole copy is an all-gather.
    "collective_matmul_from_whole_x": '''
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P


def _ring_of_a_flag(x_block):
    n = lax.axis_size("model")
    passing = jnp.where(x_block[:1, :1] > -jnp.inf, 1, 0).astype(jnp.int32)
    for _ in range(1, n):
        passing = lax.ppermute(passing, "model", perm=[(i, (i + 1) % n) for i in range(n)])
    return passing


def collective_matmul(x, w, mesh):
    cols = mesh.shape["model"]
    xs = jax.device_put(x, NamedSharding(mesh, P("model", None)))
    w = jax.device_put(w, NamedSharding(mesh, P(None, "model")))
    flag = jax.shard_map(_ring_of_a_flag, mesh=mesh, in_specs=P("model", None), out_specs=P(None, "model"))(xs)
    y = jnp.matmul(jnp.asarray(x), w, out_sharding=NamedSharding(mesh, P(None, "model")))
    i = jnp.repeat(flag, y.shape[1] // cols, axis=1, out_sharding=NamedSharding(mesh, P(None, "model")))
    return jnp.where(i == 1, y, jnp.where(i == 0, jnp.full_like(y, 2.0), jnp.zeros_like(y)))
''',
    "collective_matmul_direct_sends": (ROOT / "solutions" / "exercise8" / "collective_matmul.py").read_text() + '''

def _per_device(x_block, w_block):
    n, me = lax.axis_size("model"), lax.axis_index("model")
    products = jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype).at[me].set(x_block @ w_block)
    for k in range(1, n):
        sent = lax.ppermute(x_block, "model", perm=[(i, (i + k) % n) for i in range(n)])
        products = products.at[(me - k) % n].set(sent @ w_block)
    return products.reshape(n * x_block.shape[0], w_block.shape[1])
''',
    # ... and with each send's operand made to read the block that arrived before, times zero.
    "collective_matmul_direct_sends_disguised": (ROOT / "solutions" / "exercise8" / "collective_matmul.py").read_text() + '''

def _per_device(x_block, w_block):
    n, me = lax.axis_size("model"), lax.axis_index("model")
    products = jnp.zeros((n, x_block.shape[0], w_block.shape[1]), x_block.dtype).at[me].set(x_block @ w_block)
    sent = jnp.zeros_like(x_block)
    for k in range(1, n):
        sent = lax.ppermute(x_block + 0 * sent, "model", perm=[(i, (i + k) % n) for i in range(n)])
        products = products.at[(me - k) % n].set(sent @ w_block)
    return products.reshape(n * x_block.shape[0], w_block.shape[1])
''',
    # Exercise 8's compiler: x and w constrained whole before the product, so every device multiplies them whole and
    # the compiler gathers them, y laid out as asked.
    "compiler_whole_inputs": (ROOT / "solutions" / "exercise8" / "compiler.py").read_text() + '''

def one_reduction(x, w, mesh):
    whole = NamedSharding(mesh, P())

    def product(x, w):
        return jax.lax.with_sharding_constraint(x, whole) @ jax.lax.with_sharding_constraint(w, whole)

    return jax.jit(product, out_shardings=NamedSharding(mesh, P("data", None)))(x, w)
''',
    # The same with x and w copied whole to every device by device_put before the product, outside any jit: jit
    # alone would drop it (grader.sandbox.program_as_written).
    "compiler_device_put_whole": (ROOT / "solutions" / "exercise8" / "compiler.py").read_text() + '''

def one_reduction(x, w, mesh):
    whole = NamedSharding(mesh, P())
    x, w = jax.device_put(x, whole), jax.device_put(w, whole)
    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P("data", None)))(x, w)
''',
    # Round 53 (written apart): the asked-for program only where the structural test used to read it (the squarest
    # mesh, a batch of 3 rows a device, rings of 4, 4 devices), a plain one on the meshes, batches and device counts
    # only the value tests compile. A program knows all of them while it is traced; a structural test reads every
    # mesh and batch its task's tests compile (meshes.every), and its points need every device count (all_counts).
    "tensor_parallel_only_where_read": (ROOT / "solutions" / "exercise8" / "tensor_parallel.py").read_text() + '''

_asked = mlp


def mlp(x, w1, w2, mesh):
    if mesh.shape["data"] == 2:  # 2 x 2 and 2 x 4
        return _asked(x, w1, w2, mesh)
    return jax.jit(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2)(x, w1, w2)
''',
    "fsdp_only_batch_read": (ROOT / "solutions" / "exercise8" / "fsdp.py").read_text() + '''

_asked = fsdp_step


def _data_parallel(w_shard, x, y, lr):
    whole = lax.all_gather(w_shard, "data", axis=0, tiled=True)
    loss, grad = jax.value_and_grad(loss_fn)(whole, x, y)
    new, k = whole - lr * lax.pmean(grad, "data"), w_shard.shape[0]
    return lax.dynamic_slice_in_dim(new, lax.axis_index("data") * k, k), lax.pmean(loss, "data")


def fsdp_step(w, x, y, lr, mesh):
    if x.shape[0] == 3 * mesh.shape["data"]:
        return _asked(w, x, y, lr, mesh)
    rows = NamedSharding(mesh, P("data", None))
    return jax.shard_map(lambda w, x, y: _data_parallel(w, x, y, lr), mesh=mesh, in_specs=P("data", None),
                         out_specs=(P("data", None), P()))(*(jax.device_put(a, rows) for a in (w, x, y)))
''',
    "rings_only_rings_of_4": (ROOT / "solutions" / "exercise8" / "rings.py").read_text() + '''

_asked = ring_all_gather


def ring_all_gather(block, axis_name):
    if lax.axis_size(axis_name) != 4:
        return lax.all_gather(block, axis_name, tiled=True)
    return _asked(block, axis_name)
''',
    "compiler_only_on_4_devices": (ROOT / "solutions" / "exercise8" / "compiler.py").read_text() + '''

_asked = one_reduction


def one_reduction(x, w, mesh):
    if jax.device_count() == 4:
        return _asked(x, w, mesh)
    return jax.jit(jnp.matmul, out_shardings=NamedSharding(mesh, P()))(x, w)
''',
    # Exercise 7's structural tests read the program on their own inputs (dot: 405 elements; a learning rate of
    # 0.05), and its value tests call the functions on others, which a program also knows while it is traced: the
    # asked-for program only where it used to be read, a plain one on the value tests' shapes, learning rates, rings
    # and device counts. A structural test reads every one of them too, and its points need every device count.
    "dot_only_where_read": (ROOT / "solutions" / EXERCISE / "dot.py").read_text() + '''

_asked = distributed_dot


def distributed_dot(x, y):
    if jnp.shape(x)[0] == 405:
        return _asked(x, y)
    return jnp.dot(x, y)
''',
    "basics_only_where_read": (ROOT / "solutions" / EXERCISE / "basics.py").read_text() + '''

_asked = {"square_plus_one": square_plus_one, "per_device_sum": per_device_sum, "per_device_matmul": per_device_matmul}


def square_plus_one(x):
    return _asked["square_plus_one"](x) if x.shape[1:] == (4,) else x ** 2 + 1


def per_device_sum(x):
    return _asked["per_device_sum"](x) if x.shape[1:] == (4,) else x.reshape(len(x), -1).sum(axis=1)


def per_device_matmul(X, Y):
    return _asked["per_device_matmul"](X, Y) if X.shape[1:] == (2, 3) else jnp.matmul(X, Y)
''',
    "collectives_only_where_read": (ROOT / "solutions" / EXERCISE / "collectives.py").read_text() + '''

_asked = {"stats": all_reduce_stats, "standardize": standardize_across_devices}


def all_reduce_stats(x):
    if x.shape[1] == 5:
        return _asked["stats"](x)
    return tuple(jnp.broadcast_to(stat(x, axis=0), x.shape) for stat in (jnp.sum, jnp.mean, jnp.max))


def standardize_across_devices(x):
    return _asked["standardize"](x) if x.shape[1] == 5 else (x - x.mean()) / x.std()
''',
    "ring_only_where_read": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

_asked = {"shift": ring_shift, "sum": ring_allreduce}


def ring_shift(x, axis_name, shift=1):  # (6,): what the structural test's ring_allreduce passes on
    if x.shape in ((2, 3), (6,)) and shift == 1:
        return _asked["shift"](x, axis_name, shift)
    return lax.all_gather(x, axis_name)[(lax.axis_index(axis_name) - shift) % lax.axis_size(axis_name)]


def ring_allreduce(x, axis_name):
    return _asked["sum"](x, axis_name) if x.shape == (6,) else lax.psum(x, axis_name)
''',
    "ring_only_on_every_device": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''
import jax

_asked = {"shift": ring_shift, "sum": ring_allreduce}


def ring_shift(x, axis_name, shift=1):
    if lax.axis_size(axis_name) == jax.device_count():
        return _asked["shift"](x, axis_name, shift)
    return lax.all_gather(x, axis_name)[(lax.axis_index(axis_name) - shift) % lax.axis_size(axis_name)]


def ring_allreduce(x, axis_name):
    if lax.axis_size(axis_name) == jax.device_count():
        return _asked["sum"](x, axis_name)
    return lax.psum(x, axis_name)
''',
    "ring_optimal_only_where_read": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

_asked = ring_allreduce_optimal


def ring_allreduce_optimal(x, axis_name):
    return _asked(x, axis_name) if x.shape in ((1001,), (1000,)) else lax.psum(x, axis_name)
''',
    "train_only_where_read": (ROOT / "solutions" / EXERCISE / "train.py").read_text() + '''

_asked = train_step


def train_step(params, batch, lr):
    if lr == 0.05:
        return _asked(params, batch, lr)
    X, y = batch
    loss, grad = jax.value_and_grad(loss_fn)(params[0], (X.reshape(-1, X.shape[-1]), y.reshape(-1)))
    return params - lr * grad, jnp.full(len(params), loss)
''',
    "mesh_only_from_4_devices": (ROOT / "solutions" / EXERCISE / "mesh.py").read_text() + '''

_asked = sharded_matmul


def sharded_matmul(x, w, mesh):
    return _asked(x, w, mesh) if mesh.size >= 4 else x @ w
''',
    # Round 58 (written apart): below the 405 elements where dot's work is counted, the whole vectors on every
    # device and a psum of dot / n (the psum needed); what each device receives of x is measured at every length.
    "dot_replicated_below_405": (ROOT / "solutions" / EXERCISE / "dot.py").read_text() + '''

_asked = distributed_dot


def distributed_dot(x, y):
    n = jax.device_count()
    if x.shape[0] >= 405:
        return _asked(x, y)
    whole = jax.pmap(lambda d, a, b: lax.psum(jnp.dot(a, b) / n, "i"), axis_name="i", in_axes=(0, None, None))
    return whole(jnp.arange(n), x, y)[0]
''',
    # Round 58 (written apart): on int32 blocks the simple ring, each whole block sent as int16 (n - 1 steps of half
    # a block's bytes: 2(n - 1) chunks' bytes on 4 devices); and the same ring with two int16 packed to an int32
    # (a bitcast: int32 sent, half the block's bytes each step): n - 1 steps where the ring runs 2(n - 1).
    "ring_optimal_narrowed": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

_asked = ring_allreduce_optimal


def ring_allreduce_optimal(x, axis_name):
    if x.dtype != jnp.int32:
        return _asked(x, axis_name)

    def step(_, carry):
        total, passing = carry
        passing = ring_shift(passing, axis_name)
        return total + passing.astype(x.dtype), passing

    return lax.fori_loop(0, lax.axis_size(axis_name) - 1, step, (x, x.astype(jnp.int16)))[0]
''',
    "ring_optimal_packed": (ROOT / "solutions" / EXERCISE / "ring.py").read_text() + '''

_asked = ring_allreduce_optimal


def ring_allreduce_optimal(x, axis_name):
    if x.dtype != jnp.int32:
        return _asked(x, axis_name)
    unpack = lambda p: lax.bitcast_convert_type(p, jnp.int16).reshape(x.shape).astype(x.dtype)  # noqa: E731

    def step(_, carry):
        total, passing = carry
        passing = ring_shift(passing, axis_name)
        return total + unpack(passing), passing

    packed = lax.bitcast_convert_type(x.astype(jnp.int16).reshape(-1, 2), jnp.int32)
    return lax.fori_loop(0, lax.axis_size(axis_name) - 1, step, (x, packed))[0]
''',
    # The whole MLP on every device, and a psum of (y - y) over 'model' for show.
    "tensor_parallel_replicated": '''
        import jax
        from jax import lax
        from jax.sharding import NamedSharding, PartitionSpec as P


        def mlp(x, w1, w2, mesh):
            y = jax.nn.relu(x @ w1) @ w2
            nothing = jax.shard_map(lambda a: lax.psum(a - a, "model"), mesh=mesh, in_specs=P("data", "model"),
                                    out_specs=P("data", "model"))
            return y + nothing(jax.device_put(y, NamedSharding(mesh, P("data", "model"))))
        ''',
    # The full-batch step on every device, its results laid out as asked: none of the collectives the algorithm
    # needs, and the partitioner's own gather over 'model' to lay out the results.
    "two_d_replicated": '''
        import jax
        import jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P


        def loss_fn(w1, w2, x, y):
            return jnp.mean((jax.nn.relu(x @ w1) @ w2 - y) ** 2)


        def train_step(w1, w2, x, y, lr, mesh):
            loss, (g1, g2) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w1, w2, x, y)
            at = lambda a, *spec: jax.device_put(a, NamedSharding(mesh, P(*spec)))  # noqa: E731
            return at(w1 - lr * g1, "data", "model"), at(w2 - lr * g2, "model", "data"), loss
        ''',
}

# The suites this file adds: the student's process sees the test's inputs once before the program.
AFTER_A_CALL = '''
import numpy as np

from grader.suite import hlo, work


def test_dot_after_a_call(student, rng, devices):
    x = rng.normal(size=45).astype(np.float32)
    student.call("MODULE.distributed_dot", x, x)
    program = student.program("MODULE.distributed_dot", x, x, expect=lambda a, b: np.dot(a.astype(np.float64), b))
    assert len(hlo.select(program.hlo, "all-reduce", by_student=True)) == 1, "no psum of its own"
    work.expect_share_of_work(program, "distributed_dot", "its own slices", devices)
'''
AFTER_A_PROBE = '''
import numpy as np

from grader.suite import hlo


def test_ring_allreduce_after_a_probe(student, rng, devices):
    x = rng.normal(size=(devices, 6)).astype(np.float32)
    student.probe("values_MODULE.ring_allreduce", x)
    out = student.program("probes_MODULE.ring_allreduce", x,
                          expect=lambda v: np.broadcast_to(v.astype(np.float64).sum(axis=0), v.shape))
    assert all(c.op == "collective-permute" for c in hlo.select(out.hlo, by_student=True)), "not ppermute only"
'''

# A probe that runs a ring all-reduce on values, as exercise 7's ring value tests do.
VALUES_PROBE = '''
import jax
import numpy as np

from grader.sandbox import student_function


def ring_allreduce(x):
    fn = student_function("MODULE.ring_allreduce")
    return np.asarray(jax.pmap(lambda block: fn(block, "ring"), axis_name="ring")(x))
'''

# Suites of this file's own: (test file, the exercise 7 task whose probes it calls, or None, a values probe or None).
OWN_SUITES = {"after a call": (AFTER_A_CALL, None, None), "after a probe": (AFTER_A_PROBE, "ring", VALUES_PROBE)}
NEVER_SAW = "a second set of inputs drawn by the grader that your code never saw"
MORE_WORK = "times the reference's"  # one device's arithmetic against one device's of the reference program
HELD = "hand each device only its block of"  # a device's pmap or shard_map handed whole inputs
OFF_THE_STACK = "use only the block of x your function is handed"  # a ring's per-device function reaching x whole
WHOLE_WORK = "times the reference's (about the whole computation's work, done on every device)"
OWN_BLOCK = "of them send the device's own"  # direct sends: more ppermutes than a ring's start afresh
OTHER_ROUTE = "in one step and to device"  # a partner other than the ring's neighbour
REDUCED_BY_XLA = "that your program computes outside its"  # partitioner reductions the reference has not
WRITTEN_OUTSIDE = "the arithmetic your program writes outside its"  # work around the per-device code, beyond the reference's
PRODUCTS_AGAIN = "some product is computed more than the task needs"  # copies of a product, each beside a ppermute
NOT_OVERLAPPED = "runs a product while a block travels in only"
OTHER_KIND = "where the reference's runs no"  # a collective of a kind the reference never runs (the real combining)
MORE_BYTES = "times what the reference's"  # one kind of collective moving more than the reference's does  # a ring that brings every block before any product
NO_PMAP, NO_SHARD_MAP = (f"its program has no {tool} that its answer depends on" for tool in ("jax.pmap", "jax.shard_map"))
# module: (device counts, its suite: an exercise 7 task's or one of OWN_SUITES, {structural test: what it says})
TASKS = {
    "collectives_rows_by_a_ring": ([2], "collectives", {"test_communicates_with_all_reduce": "the whole"}),
    "ring_voted_psums": ([2], "ring", {"test_ring_allreduce_uses_ppermute_only": "runs an all-reduce (from lax.psum)"}),
    "dot_products_only_outside": ([2], "dot", {"test_dot_uses_one_all_reduce": WRITTEN_OUTSIDE}),
    "fsdp_gradient_in_scalar_psums": ([4], "exercise8/fsdp", {
        "test_fsdp_step_gathers_weights_and_scatters_gradients": "all-reduces) per device"}),
    "two_d_gradient_in_scalar_psums": ([4], "exercise8/two_d", {
        "test_two_d_step_communicates_over_the_right_axes": "all-reduces) over 'data'"}),
    "basics_one_column_inside": ([2], "basics", {"test_each_function_runs_a_pmap": WRITTEN_OUTSIDE}),
    "collectives_statistics_outside": ([2], "collectives", {"test_communicates_with_all_reduce": WRITTEN_OUTSIDE}),
    "matmuls_products_outside": ([4], "exercise8/matmuls", {
        "test_matmul_cases_send_the_cheapest_collective": WRITTEN_OUTSIDE}),
    "collective_matmul_ring_first": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": NOT_OVERLAPPED}),
    "dot_knows_the_seed": ([2], "dot", {"test_dot_uses_one_all_reduce": NEVER_SAW}),
    "dot_learned": ([2], "after a call", {"test_dot_after_a_call": NEVER_SAW}),
    "dot_jit_patched": ([2], "after a call", {"test_dot_after_a_call": NEVER_SAW}),
    "dot_export_patched": ([2], "after a call", {"test_dot_after_a_call": NEVER_SAW}),
    "dot_for_other_shapes": ([2], "dot", {"test_dot_uses_one_all_reduce": "it takes float32[3], float32[3], not the "
                                                                          "test's inputs"}),
    "dot_psum_of_zero": ([2], "dot", {"test_dot_uses_one_all_reduce": REDUCED_BY_XLA}),
    "dot_psum_of_times_zero": ([2], "dot", {"test_dot_uses_one_all_reduce": REDUCED_BY_XLA}),
    "dot_psum_times_zero": ([2], "dot", {"test_dot_uses_one_all_reduce": REDUCED_BY_XLA}),
    "dot_psum_as_a_test": ([2], "dot", {"test_dot_uses_one_all_reduce": REDUCED_BY_XLA}),
    "dot_pmap_as_a_test": ([2], "dot", {"test_dot_uses_one_all_reduce": NO_PMAP}),
    "dot_whole_work_disguised": ([2], "dot", {"test_dot_uses_one_all_reduce": WHOLE_WORK}),
    # On more than one device a pmap the answer does not depend on is no pmap (grader.suite.bypass).
    "dot_psum_of_difference": ([2], "dot", {"test_dot_uses_one_all_reduce": NO_PMAP}),
    "dot_loop_of_elements": ([2], "dot", {"test_dot_uses_one_all_reduce": NO_PMAP}),
    "dot_whole_vectors_sliced": ([2], "dot", {"test_dot_uses_one_all_reduce": HELD}),
    # (the select's compare of the whole vectors is arithmetic: the work, twice the reference's, is measured first)
    "dot_mixed_whole": ([2], "dot", {"test_dot_uses_one_all_reduce": (HELD, WHOLE_WORK)}),
    "dot_psum_of_whole_work": ([2], "dot", {"test_dot_uses_one_all_reduce": WHOLE_WORK}),
    "dot_whole_in_chunks": ([2], "dot", {"test_dot_uses_one_all_reduce": WHOLE_WORK}),
    "ring_learned": ([2], "after a probe", {"test_ring_allreduce_after_a_probe": NEVER_SAW}),
    "ring_lying_label": ([2], "ring", {"test_ring_allreduce_uses_ppermute_only": "runs an all-reduce (from lax.squeeze)"}),
    "basics_patched_jaxpr": ([2], "basics", {"test_each_function_runs_a_pmap": "square_plus_one: its program has no "
                                                                              "jax.pmap"}),
    "basics_idle_pmap": ([2], "basics", {"test_each_function_runs_a_pmap": "square_plus_one: its program has no "
                                                                          "jax.pmap"}),
    "basics_pass_through_pmap": ([4], "basics", {"test_each_function_runs_a_pmap": "square_plus_one: its program has "
                                                                                  "no jax.pmap"}),
    "collectives_max_by_compares": ([2], "collectives", {"test_communicates_with_all_reduce": WHOLE_WORK}),
    "collectives_replicated": ([2], "collectives", {"test_communicates_with_all_reduce": NO_PMAP}),
    # on 2 devices whole work on every device is no more proven than a costlier algorithm (round 47), unless the
    # per-device computation is handed whole inputs: the statistic left without its collective is what is measured
    "collectives_psum_gathers": ([2], "collectives", {"test_communicates_with_all_reduce": (
        "never take a maximum", "the equivalent of the whole input")}),
    "train_replicated": ([2], "train", {"test_train_step_sends_only_gradient_and_loss": NO_PMAP}),
    "mesh_replicated": ([4], "mesh", {"test_sharded_matmul_is_row_parallel_with_one_psum": NO_SHARD_MAP}),
    "dot_carries_a_one": ([2], "dot", {"test_dot_uses_one_all_reduce": NO_PMAP}),
    "dot_carries_a_one_in_a_loop": ([2], "dot", {"test_dot_uses_one_all_reduce": REDUCED_BY_XLA}),
    "collectives_carries_a_one": ([2], "collectives", {"test_communicates_with_all_reduce": NO_PMAP}),
    "basics_picks_by_a_flag": ([2], "basics", {"test_each_function_runs_a_pmap": "square_plus_one: " + NO_PMAP}),
    "train_carries_a_one": ([2], "train", {"test_train_step_sends_only_gradient_and_loss": NO_PMAP}),
    "mesh_carries_a_one": ([4], "mesh", {"test_sharded_matmul_is_row_parallel_with_one_psum": NO_SHARD_MAP}),
    # at 405 elements the per-device code's measurement comes first: x[0] added and taken away again
    "dot_checksum": ([2], "dot", {"test_dot_uses_one_all_reduce": (REDUCED_BY_XLA, NO_PMAP)}),
    "collectives_checksum": ([2], "collectives", {"test_communicates_with_all_reduce": REDUCED_BY_XLA}),
    "mesh_checksum": ([4], "mesh", {"test_sharded_matmul_is_row_parallel_with_one_psum": REDUCED_BY_XLA}),
    "train_checksum": ([2], "train", {"test_train_step_sends_only_gradient_and_loss": REDUCED_BY_XLA}),
    "basics_passes_on_the_work": ([2], "basics", {"test_each_function_runs_a_pmap": "square_plus_one: " + NO_PMAP}),
    "ring_buffer_in_a_while_loop": ([2], "ring", {"test_ring_allreduce_uses_ppermute_only": "a loop whose length is "
                                                                                             "unknown"}),
    "fsdp_gradient_by_the_entry": ([4], "exercise8/fsdp", {
        "test_fsdp_step_gathers_weights_and_scatters_gradients": "bytes, 24 times) per device"}),
    "two_d_gradient_by_the_entry": ([4], "exercise8/two_d", {
        "test_two_d_step_communicates_over_the_right_axes": "all-reduces) over 'data'"}),
    "ring_direct_sends": ([4], "ring", {"test_ring_allreduce_uses_ppermute_only": OWN_BLOCK}),
    "ring_direct_sends_disguised": ([4], "ring", {"test_ring_allreduce_uses_ppermute_only": OWN_BLOCK}),
    "ring_direct_sends_in_a_loop": ([4], "ring", {"test_ring_allreduce_uses_ppermute_only": OWN_BLOCK}),
    "ring_chains_of_own_blocks": ([4], "ring", {"test_ring_allreduce_uses_ppermute_only": "more than the n - 1 blocks"}),
    "ring_recursive_doubling": ([4], "ring", {"test_ring_allreduce_uses_ppermute_only": OTHER_ROUTE}),
    "ring_optimal_halving": ([4], "ring_optimal", {"test_optimal_sends_2_n_minus_1_chunks": OTHER_ROUTE}),
    "ring_optimal_long_chunks": ([4], "ring_optimal", {"test_optimal_sends_2_n_minus_1_chunks": "each device sends "
                                                                                                  "6024 bytes"}),
    "collective_matmul_copies_of_its_product": ([8], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": PRODUCTS_AGAIN}),
    "collective_matmul_replicated": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": NO_SHARD_MAP}),
    # the whole product written outside the shard_map, its ring for show
    "collective_matmul_ring_and_whole": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": WRITTEN_OUTSIDE}),
    "tensor_parallel_whole_then_psum": ([4], "exercise8/tensor_parallel", {
        "test_mlp_runs_one_all_reduce_over_model": MORE_WORK}),
    # x and w arrive split as the case says: the whole product needs them gathered, an all-reduce XLA adds
    "matmuls_whole_then_scatter": ([4], "exercise8/matmuls", {
        "test_matmul_cases_send_the_cheapest_collective": REDUCED_BY_XLA}),
    "fsdp_whole_batch": ([4], "exercise8/fsdp", {"test_fsdp_step_gathers_weights_and_scatters_gradients": MORE_WORK}),
    "dot_summed_by_a_ring": ([2], "dot", {"test_dot_uses_one_all_reduce": OTHER_KIND}),
    "fsdp_reduce_scatters_of_copies": ([4], "exercise8/fsdp", {
        "test_fsdp_step_gathers_weights_and_scatters_gradients": MORE_BYTES}),
    "fsdp_whole_w": ([4], "exercise8/fsdp", {"test_fsdp_step_gathers_weights_and_scatters_gradients": HELD}),
    "compiler_whole_inputs": ([4], "exercise8/compiler", {
        "test_one_reduction_runs_one_sum_over_model": "and no sum over 'model'"}),
    "compiler_device_put_whole": ([4], "exercise8/compiler", {
        "test_one_reduction_runs_one_sum_over_model": "and no sum over 'model'"}),
    "ring_whole_x_off_the_stack": ([2], "ring", {"test_ring_allreduce_uses_ppermute_only": OFF_THE_STACK}),
    "ring_optimal_whole_x_off_the_stack": ([4], "ring_optimal", {
        "test_optimal_sends_2_n_minus_1_chunks": OFF_THE_STACK}),
    "rings_whole_x_off_the_stack": ([4], "exercise8/rings", {
        "test_ring_all_gather_sends_n_minus_1_blocks": OFF_THE_STACK}),
    # At 4 devices the structural tests' mesh is 1 x 4 (meshes.long_rings): 3 ppermutes, each of the device's own
    # block.
    "rings_direct_sends": ([4], "exercise8/rings", {"test_ring_all_gather_sends_n_minus_1_blocks": OWN_BLOCK}),
    "rings_recursive_doubling": ([4], "exercise8/rings", {"test_ring_all_gather_sends_n_minus_1_blocks": OTHER_ROUTE}),
    "collective_matmul_from_whole_x": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": NO_SHARD_MAP}),
    "collective_matmul_direct_sends": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": OWN_BLOCK}),
    "collective_matmul_direct_sends_disguised": ([4], "exercise8/collective_matmul", {
        "test_collective_matmul_is_a_ring_of_n_minus_1_ppermutes": OWN_BLOCK}),
    "tensor_parallel_only_where_read": ([4], "exercise8/tensor_parallel", {
        "test_mlp_runs_one_all_reduce_over_model": "on a 1 x 4 mesh one device performs"}),
    "fsdp_only_batch_read": ([4], "exercise8/fsdp", {
        "test_fsdp_step_gathers_weights_and_scatters_gradients": "a batch of 4 rows, the whole gradient"}),
    "rings_only_rings_of_4": ([4], "exercise8/rings", {
        "test_ring_all_gather_sends_n_minus_1_blocks": "runs an all-gather over 'model' on a 2 x 2 mesh"}),
    # passes on 4 devices, where it is honest, and fails on 2: both count as failed (all_counts)
    "compiler_only_on_4_devices": ([2, 4], "exercise8/compiler", {
        "test_one_reduction_runs_one_sum_over_model": "it moves y"}),
    "dot_only_where_read": ([2], "dot", {"test_dot_uses_one_all_reduce": "distributed_dot with len 5: " + NO_PMAP}),
    "basics_only_where_read": ([2], "basics", {"test_each_function_runs_a_pmap": "square_plus_one on float32[2,7]: "
                                                                                 + NO_PMAP}),
    "collectives_only_where_read": ([2], "collectives", {"test_communicates_with_all_reduce": (
        "all_reduce_stats(x): " + NO_PMAP, "standardize_across_devices(x): " + NO_PMAP)}),
    "ring_only_where_read": ([4], "ring", {
        "test_ring_shift_default_is_one_ppermute": "with blocks of shape (5,) and shift=1 runs an all-gather",
        "test_ring_allreduce_uses_ppermute_only": "with float32 blocks of shape (7,) runs an all-reduce"}),
    "ring_only_on_every_device": ([4], "ring", {
        "test_ring_shift_default_is_one_ppermute": "on a ring of 3 of the 4 devices runs an all-gather",
        "test_ring_allreduce_uses_ppermute_only": "on a ring of 3 of the 4 devices runs an all-reduce"}),
    "ring_optimal_only_where_read": ([4], "ring_optimal", {
        "test_optimal_sends_2_n_minus_1_chunks": "with float32 blocks of shape (13,) runs an all-reduce"}),
    "train_only_where_read": ([2], "train", {"test_train_step_sends_only_gradient_and_loss": NO_PMAP}),
    # passes on 4 devices, where it is honest, and fails on 2: both count as failed (all_counts)
    "mesh_only_from_4_devices": ([2, 4], "mesh", {"test_sharded_matmul_is_row_parallel_with_one_psum": (
        NO_SHARD_MAP, "passes here, but its points need every device count")}),
    "dot_replicated_below_405": ([2], "dot", {"test_dot_uses_one_all_reduce": "moves only values every device "
                                                                              "already holds"}),
    "ring_optimal_narrowed": ([4], "ring_optimal", {"test_optimal_sends_2_n_minus_1_chunks": "carry int16 on 4 devices"}),
    "ring_optimal_packed": ([4], "ring_optimal", {"test_optimal_sends_2_n_minus_1_chunks": "run 3 times on 4 devices"}),
    "tensor_parallel_replicated": ([4], "exercise8/tensor_parallel", {
        "test_mlp_runs_one_all_reduce_over_model": "mlp runs no collective"}),
    "two_d_replicated": ([4], "exercise8/two_d", {
        "test_two_d_step_communicates_over_the_right_axes": "train_step runs an all-gather over 'model'"}),
}


# Exercise 7's suites whose probes module is another task's.
PROBES_OF = {"ring_optimal": "ring"}
# Suites cut down further for one submission: (text, replacement) in its test file.
SUITE_EDITS = {"ring_optimal_long_chunks": ("LENGTHS = (1001, 1000)", "LENGTHS = (1000,)"),  # where the chunk is too long
               "matmuls_whole_then_scatter": ('parametrize("case", CASES)', 'parametrize("case", ["matmul_case3"])'),
               "matmuls_products_outside": ('parametrize("case", CASES)', 'parametrize("case", ["matmul_case2"])'),
               "collectives_rows_by_a_ring": ("list(WIDTHS)", '["standardize_across_devices"]'),
               "collectives_statistics_outside": ("list(WIDTHS)", '["standardize_across_devices"]'),
               "collectives_max_by_compares": ("list(WIDTHS)", '["all_reduce_stats"]')}


def structural_suite(task: str, keep, suites=SUITES) -> str:
    """the suite for ``task`` (in ``suites``, exercise 7's by default) with every test function but those
    in ``keep`` cut out."""
    source = (suites / f"test_{task}.py").read_text()
    lines = source.splitlines()
    cut = [(min([n.lineno, *(d.lineno for d in n.decorator_list)]), n.end_lineno)
           for n in ast.parse(source).body
           if isinstance(n, ast.FunctionDef) and n.name.startswith("test") and n.name not in keep]
    for start, end in sorted(cut, reverse=True):
        del lines[start - 1:end]
    return "\n".join(lines) + "\n"


def suite_files(module: str, suite: str, tests) -> dict[str, str]:
    """The test file (and the probe modules it calls, if any) grading ``module`` with ``suite``."""
    source, probes_of, values_probe = OWN_SUITES.get(suite, (None, PROBES_OF.get(suite, suite), None))
    suites = SUITES
    if "/" in suite:  # another exercise's suite, whose programs come from its shared probes module
        exercise, suite = suite.split("/")
        suites, probes_of = ROOT / "tests" / exercise, None
    if source is None:
        source = structural_suite(suite, tests, suites).replace(f'"{suite}.', f'"{module}.')
    files = {f"test_{module}.py": source.replace("MODULE", module).replace(f'"probes_{probes_of}.', f'"probes_{module}.')}
    if module in SUITE_EDITS:
        assert SUITE_EDITS[module][0] in files[f"test_{module}.py"], f"{module}'s suite edit finds nothing to edit"
        files[f"test_{module}.py"] = files[f"test_{module}.py"].replace(*SUITE_EDITS[module])
    if suites != SUITES:
        files["probes_programs.py"] = (suites / "probes_programs.py").read_text()
    probes = suites / f"probes_{probes_of}.py"
    if probes_of and probes.exists():
        files[f"probes_{module}.py"] = probes.read_text().replace(f'"{probes_of}.', f'"{module}.')
    if values_probe:
        files[f"values_{module}.py"] = values_probe.replace("MODULE", module)
    return files


def stub(source: str) -> str:
    """The stub of a module: each of its public functions raising NotImplementedError."""
    names = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    return "".join(f"def {name}(*args, **kwargs):\n    raise NotImplementedError\n\n\n" for name in names)


# The real solution each hostile module stands in for, by its suite: what its program is compared with.
REFERENCE_OF = {"after a call": "exercise7/dot", "after a probe": "exercise7/ring", "ring_optimal": "exercise7/ring"}


def reference(suite: str) -> str:
    """The course's solution module of the task ``suite`` grades (exercise 7's unless it names another)."""
    return (ROOT / "solutions" / f"{REFERENCE_OF.get(suite, suite if '/' in suite else f'{EXERCISE}/{suite}')}.py"
            ).read_text()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course of one task per hostile submission, each graded by its suite; the submissions are in
    submissions/ex (what the tests grade), its solutions/ex the real solutions under the hostile modules'
    names (what their programs are compared with), the stubs name the modules."""
    root = tmp_path_factory.mktemp("verdicts")
    lines = ["course: verdict-facts", "defaults: {timeout_s: 60, local_timeout_s: 60}", "exercises:", "  ex:",
             "    title: Structural points against hostile submissions", "    tasks:"]
    for folder in ("exercises/ex", "solutions/ex", "submissions/ex", "tests/ex"):
        (root / folder).mkdir(parents=True)
    for module, (devices, suite, failures) in TASKS.items():
        rules = ", ".join(f"{test}: {{all_counts: true}}" for test in failures)  # as course.yaml's structural tests
        lines.append(f"      - {{id: {module}, title: {module}, points: 10, hint: 'compute it', devices: {devices}, "
                     f"tests: {{{rules}}}}}")
        source = textwrap.dedent(SUBMISSIONS[module])
        (root / "submissions/ex" / f"{module}.py").write_text(source)
        (root / "solutions/ex" / f"{module}.py").write_text(reference(suite))
        (root / "exercises/ex" / f"{module}.py").write_text(stub(source))
        for name, text in suite_files(module, suite, failures).items():
            (root / "tests/ex" / name).write_text(text)
    (root / "course.yaml").write_text("\n".join(lines) + "\n")
    return root


def expect_no_structural_point(module: str, cases: list[tuple[str, str, str]], words: bool = True) -> None:
    """Every case of ``module``'s task, (test, outcome, message), failed, saying what its rule says if ``words``
    (a tuple: one of the rules, where the test's cases measure different functions)."""
    failures = TASKS[module][2]
    assert cases and all(outcome == "failed" for _, outcome, _ in cases), cases
    for test, _, message in cases if words else ():
        said = failures[test] if isinstance(failures[test], tuple) else (failures[test],)
        assert any(rule in message for rule in said), message


@pytest.fixture(scope="module")
def graded(course):
    """Every hostile submission graded in one run of ``grade``: {task id: its JSON report entry}."""
    proc = run_grade("ex", "--course", str(course), "--submission", str(course / "submissions"), "--format", "json",
                     "--seed", str(SEED), timeout=900)
    assert proc.returncode == 0, proc.stderr
    return {t["id"]: t for t in json.loads(proc.stdout)["tasks"]}


@pytest.mark.parametrize("module", TASKS)
def test_no_structural_point_for_a_program_that_does_not_compute_it(graded, module):
    task = graded[module]
    assert task["score"] == 0, task["cases"]
    expect_no_structural_point(module, [(c["test"], c["outcome"], c["message"]) for c in task["cases"]])


def test_no_structural_point_in_gradescopes_layout_either(course, graded, tmp_path):
    """The seed's table names the test by its id in the run above; in Gradescope's layout the id, and so
    the test's own inputs, differ: that submission fails on them, in other words. The bundle carries the
    reference's figures the run above measured (grader.grading.reference_figures)."""
    proc = run_grade("release", "ex", "--out", str(tmp_path / "out"), "--course", str(course))
    assert proc.returncode == 0, proc.stderr
    files = {f"{module}.py": textwrap.dedent(SUBMISSIONS[module]).encode() for module in TASKS}
    results = run_autograder(tmp_path / "out" / "autograder.zip", tmp_path / "gradescope", files)
    assert results["score"] == 0, results
    for module in TASKS:
        tests = [t for t in results["tests"] if t["name"].startswith(f"{module}: ")]
        expect_no_structural_point(module, [(t["name"].partition(": ")[2].split("[")[0], t["status"], t["output"])
                                            for t in tests], words=module != "dot_knows_the_seed")


# The real suites of a released copy of the course at 2 devices, in Gradescope's layout, the hostile
# modules in place of the solution's functions: each keeps every value point and loses every structural one.
# (mesh's hostile replaces the whole module: it is graded above, at 4 devices, where both mesh axes are split.)
IN_PLACE = {"dot": "dot_psum_of_difference", "ring": "ring_lying_label", "basics": "basics_patched_jaxpr",
            "collectives": "collectives_replicated", "train": "train_replicated"}
STRUCTURAL = {"test_dot_uses_one_all_reduce", "test_ring_allreduce_uses_ppermute_only",
              "test_each_function_runs_a_pmap", "test_communicates_with_all_reduce",
              "test_train_step_sends_only_gradient_and_loss"}


def test_with_the_real_suites_the_hostile_modules_keep_their_value_points_only(tmp_path):
    # the figures a release carries (communication), for the tasks the hostile modules stand in
    course = checked(copy_course(tmp_path / "course", devices=(2,), tasks=tuple(IN_PLACE)))
    assert release(course, tmp_path / "out").returncode == 0
    files = {p.name: p.read_bytes() for p in (ROOT / "solutions" / EXERCISE).glob("*.py")}
    for task, module in IN_PLACE.items():  # the solution's other functions stay; the hostile ones replace its own
        files[f"{task}.py"] += b"\n\n" + textwrap.dedent(SUBMISSIONS[module]).encode()
    results = run_autograder(tmp_path / "out" / "autograder.zip", tmp_path / "gradescope", files)
    by_task = {}
    for test in results["tests"]:
        task, _, name = test["name"].partition(": ")
        by_task.setdefault(task, []).append((name.split("[")[0], test))
    for task in IN_PLACE:
        structural = [t for name, t in by_task[task] if name in STRUCTURAL]
        values = [t for name, t in by_task[task] if name not in STRUCTURAL]
        assert structural and all(t["status"] == "failed" and t["score"] == 0 for t in structural), (task, structural)
        assert all(t["status"] == "passed" for t in values), (task, [t for t in values if t["status"] != "passed"])
