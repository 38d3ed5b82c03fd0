"""Write the real HLO that tests/grader/suite/test_hlo.py reads: one program per rule of grader/hlo.py.

Run it again after a JAX upgrade (``python tests/grader/suite/data/make_hlo.py``) and rerun the tests:
each file is the HLO text program mode hands a suite for a small program on 4 emulated CPU devices:
exported from shapes and dtypes (grader.sandbox.program_export), then named, compiled and run as a
clean worker does (grader.sandbox.program_runner).
"""

import os
import sys

import jax
import numpy as np
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from grader.protocol import ArraySpec
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program

DEVICES = 4
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hlo")


def pmapped(per_device, name="i"):
    return jax.pmap(per_device, axis_name=name)


def dot_with_squeeze(x, y):
    """The dot task's shape: one psum of a scalar, then [0] adds a partitioner all-reduce."""
    return pmapped(lambda a, b: lax.psum(jnp.dot(a, b), "i"))(x.reshape(DEVICES, -1), y.reshape(DEVICES, -1))[0]


def dot_read_from_the_last_device(x, y):
    """The dot task's shape, its answer read from the last device's copy: XLA moves it with a collective-permute."""
    return pmapped(lambda a, b: lax.psum(jnp.dot(a, b), "i"))(x.reshape(DEVICES, -1), y.reshape(DEVICES, -1))[-1]


def pmean_of_a_whole_answer(x, y):
    """Every device handed x and y whole computes the whole dot product, then averages it with the others'."""
    rows = jnp.zeros((DEVICES, 1), x.dtype)  # mapped, so that the pmap runs once per device; never read
    return jax.pmap(lambda a, b, _: lax.pmean(jnp.dot(a, b), "i"), axis_name="i", in_axes=(None, None, 0))(
        x, y, rows)[0]


def merged_psums(x):
    """Three independent psums, one a duplicate of another, and a pmean: XLA merges them."""
    return pmapped(lambda a: (lax.psum(a, "i"), lax.psum(2 * a, "i"), lax.psum(a, "i"),
                              lax.pmean(a.sum(), "i")))(x)


def pmean_only(x):
    return pmapped(lambda a: lax.pmean(a, "i"))(x)


def gathered_and_averaged(x):
    """Two results, each of its own collective: the rows gathered, their mean averaged over the devices."""
    return pmapped(lambda a: (lax.all_gather(a, "i", tiled=True), lax.pmean(a.mean(), "i")))(x)


def gathered_and_summed(x):
    """gathered_and_averaged with the mean summed over the devices: only its second result differs."""
    return pmapped(lambda a: (lax.all_gather(a, "i", tiled=True), lax.psum(a.mean(), "i")))(x)


def _shift(b):
    return lax.ppermute(b, "i", [(j, (j + 1) % DEVICES) for j in range(DEVICES)])


def ring_fori(x):
    """A ring all-reduce: one ppermute inside a fori_loop of n - 1 steps."""
    def per_device(a):
        def step(_, carry):
            acc, buf = carry
            buf = _shift(buf)
            return acc + buf, buf
        return lax.fori_loop(0, DEVICES - 1, step, (a, a))[0]
    return pmapped(per_device)(x)


def dot_fori_elements(x, y):
    """Each device's dot one element at a time in a fori_loop (round 52): a multiply and an add per element, beside
    the loop's counter and the index it wraps."""
    def per_device(a, b):
        return lax.psum(lax.fori_loop(0, a.shape[0], lambda i, s: s + a[i] * b[i], jnp.zeros((), a.dtype)), "i")
    return pmapped(per_device)(x, y)


def dot_complex(a, b, w):
    """Two real blocks packed into one complex one and multiplied by w in one complex dot (round 54): a complex
    multiply-add is four real ones, whatever the imaginary parts hold."""
    return pmapped(lambda a, b, w: ((a + 1j * b) @ w).real)(a, b, w)


def nested_loops(x):
    """A ppermute inside a fori_loop of 3 inside a fori_loop of 2: it runs 6 times."""
    def per_device(a):
        inner = lambda _, b: _shift(b) * 0.5  # noqa: E731
        return lax.fori_loop(0, 2, lambda _, b: lax.fori_loop(0, 3, inner, b), a)
    return pmapped(per_device)(x)


def while_unknown(x):
    """A ppermute inside a while_loop that stops on a value: its trip count is not known."""
    def per_device(a):
        return lax.while_loop(lambda b: b.sum() < 100.0, lambda b: _shift(b) * 2.0 + 1.0, a)
    return pmapped(per_device)(x)


def cond_branch(x):
    """A ppermute in one branch of a lax.cond on a value: counted as if that branch runs."""
    def per_device(a):
        return lax.cond(a.sum() > 0, _shift, lambda b: b * 2.0, a)
    return pmapped(per_device)(x)


def all_gather_sum(x):
    """Gathering whole blocks: each device sends its block, receives n of them."""
    return pmapped(lambda a: lax.all_gather(a, "i").sum(0))(x)


def mesh_matmul(x, w):
    """A row-parallel matmul on a 2 x 2 mesh: one psum over 'model' (recorded as psum_invariant)."""
    mesh = jax.make_mesh((2, 2), ("data", "model"))
    x = jax.device_put(x, jax.NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(w, jax.NamedSharding(mesh, P("model", None)))
    f = jax.shard_map(lambda a, b: lax.psum(a @ b, "model"), mesh=mesh,
                      in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))
    return f(x, w)


def psum_of_a_constant(x):
    """The whole sum on every device, and a psum of 0 for show: it moves nothing that depends on x."""
    return x.sum() + pmapped(lambda a: lax.psum(jnp.zeros((), a.dtype), "i"))(x)[0]


def psum_of_times_zero(x):
    """The whole sum on every device, and a psum of (the row's sum times 0) for show."""
    return x.sum() + pmapped(lambda a: lax.psum(a.sum() * 0, "i"))(x)[0]


def psum_times_zero(x):
    """The whole sum on every device, and a real psum whose result is multiplied by 0."""
    return x.sum() + pmapped(lambda a: lax.psum(a.sum(), "i") * 0)(x)[0]


def psum_of_a_difference(x):
    """The whole sum on every device, and a psum of (row - row): no reading of HLO tells it is 0."""
    return x.sum() + pmapped(lambda a: lax.psum(a.sum() - a.sum(), "i"))(x)[0]


def jit_contraction(x, w):
    """jit partitions a matmul whose contraction is split over 'model' into a replicated result: XLA's
    partitioner adds an all-reduce over 'model' and an all-gather over 'data' (printed as mesh axes and
    as an iota)."""
    mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    x = lax.with_sharding_constraint(x, jax.NamedSharding(mesh, P("data", "model")))
    w = lax.with_sharding_constraint(w, jax.NamedSharding(mesh, P("model", None)))
    return jax.jit(jnp.matmul, out_shardings=jax.NamedSharding(mesh, P()))(x, w)


def split_outputs(x):
    """Two outputs of shard_map on a 2 x 2 mesh: a (6, 8) array split over both axes, and column sums
    (8,) split over 'model'."""
    mesh = jax.make_mesh((2, 2), ("data", "model"))
    x = jax.device_put(x, jax.NamedSharding(mesh, P("data", "model")))
    f = jax.shard_map(lambda a: (a * 2, lax.psum(a.sum(0), "data")), mesh=mesh, in_specs=P("data", "model"),
                      out_specs=(P("data", "model"), P("model")))
    return f(x)


def _on_mesh(per_device, in_spec, out_spec):
    """``per_device`` in a shard_map on a 2 x 2 ('data', 'model') mesh, x laid out as ``in_spec``."""
    def program(x):
        mesh = jax.make_mesh((2, 2), ("data", "model"))
        x = jax.device_put(x, jax.NamedSharding(mesh, in_spec))
        return jax.shard_map(per_device, mesh=mesh, in_specs=in_spec, out_specs=out_spec, check_vma=False)(x)
    return program


# Structure differences (tests/grader/suite/test_structure.py): the same task's collective over another
# mesh axis, along another dimension, untiled, or a ring turned the other way.
scatter_rows = _on_mesh(lambda a: lax.psum_scatter(a, "model", scatter_dimension=0, tiled=True),
                        P("data", None), P("data", "model"))
scatter_columns = _on_mesh(lambda a: lax.psum_scatter(a, "model", scatter_dimension=1, tiled=True),
                           P("data", None), P("data", "model"))
gather_over_data = _on_mesh(lambda a: lax.all_gather(a, "data", axis=0, tiled=True), P("data", "model"),
                            P(None, "model"))
gather_over_model = _on_mesh(lambda a: lax.all_gather(a, "model", axis=0, tiled=True), P("model", "data"),
                             P(None, "data"))
gather_untiled = _on_mesh(lambda a: lax.all_gather(a, "data", axis=0).reshape(-1, a.shape[1]), P("data", "model"),
                          P(None, "model"))


def ring_backward(x):
    """ring_fori's ring turned the other way: each device sends its block to the device before it."""
    back = lambda b: lax.ppermute(b, "i", [(j, (j - 1) % DEVICES) for j in range(DEVICES)])  # noqa: E731

    def per_device(a):
        return lax.fori_loop(0, DEVICES - 1, lambda _, c: (c[0] + back(c[1]), back(c[1])), (a, a))[0]
    return pmapped(per_device)(x)


def _ring_products(a, w, barrier):
    """A collective matmul's ring on one device: n block products of what the ring brings, each as it arrives,
    or (``barrier``) only once every block arrived, behind an optimization_barrier."""
    arrived = [a]
    for _ in range(DEVICES - 1):
        arrived.append(_shift(arrived[-1]))
    if barrier:
        arrived = lax.optimization_barrier(tuple(arrived))
    return jnp.concatenate([block @ w for block in arrived])


def _ring_with_decoys(a, w):
    """The barrier's ring, with a decoy product beside each ppermute that the answer takes times zero."""
    arrived, decoy = [a], 0.0
    for _ in range(DEVICES - 1):
        decoy = decoy + jnp.sum(arrived[-1] @ w)
        arrived.append(_shift(arrived[-1]))
    return jnp.concatenate([block @ w for block in lax.optimization_barrier(tuple(arrived))]) + 0.0 * decoy


def _back(b):
    return lax.ppermute(b, "i", [(j, (j - 1) % DEVICES) for j in range(DEVICES)])


def _both_ways(a, w, barrier):
    """A collective matmul's ring both ways, half a block each way: each half multiplied as it arrives, or
    (``barrier``) each direction's halves only once that direction's ring has finished, behind a barrier of its
    own, the own block multiplied beside them."""
    half = a.shape[0] // 2
    ahead, behind = [a[:half]], [a[half:]]
    for _ in range(DEVICES - 1):
        ahead.append(_shift(ahead[-1]))
        behind.append(_back(behind[-1]))
    if barrier:
        ahead, behind = [a[:half]] + list(lax.optimization_barrier(tuple(ahead[1:]))), \
            [a[half:]] + list(lax.optimization_barrier(tuple(behind[1:])))
    return jnp.concatenate([a @ w] + [block @ w for block in ahead[1:] + behind[1:]])


def _two_chains(a, w):
    """A collective matmul's ring in two chains of one direction, the top halves and the bottom halves of the
    blocks, each chain's halves multiplied only once it has finished, behind a barrier of its own."""
    half = a.shape[0] // 2
    top, bottom = [a[:half]], [a[half:]]
    for _ in range(DEVICES - 1):
        top.append(_shift(top[-1]))
        bottom.append(_shift(bottom[-1]))
    top, bottom = lax.optimization_barrier(tuple(top[1:])), lax.optimization_barrier(tuple(bottom[1:]))
    return jnp.concatenate([a @ w] + [block @ w for block in list(top) + list(bottom)])


def _both_ways_merged(a, w):
    """A collective matmul's ring both ways, half a block each way, the two halves that arrive in a step joined
    and multiplied as one block while the next halves travel."""
    half = a.shape[0] // 2
    ahead, behind = [a[:half]], [a[half:]]
    for _ in range(DEVICES - 1):
        ahead.append(_shift(ahead[-1]))
        behind.append(_back(behind[-1]))
    return jnp.concatenate([jnp.concatenate([t, b]) @ w for t, b in zip(ahead, behind)])


def _both_ways_whole(a, w):
    """A collective matmul's ring both ways with whole blocks, n - 1 ppermutes in all (round 54): the own block
    sent either way in the first step, then each block passed on the way it came, each multiplied as it arrives."""
    ahead = behind = a
    products = [a @ w]
    for step in range(1, DEVICES // 2 + 1):
        ahead = _shift(ahead)
        products.append(ahead @ w)
        if step <= (DEVICES - 1) // 2:
            behind = _back(behind)
            products.append(behind @ w)
    return jnp.concatenate(products)


def ring_matmul(x, w):
    """A collective matmul: each block of x multiplied by w while the next one travels."""
    return pmapped(lambda a, b: _ring_products(a, b, False), "i")(x, w)


def ring_matmul_barrier(x, w):
    """The same ring with every block gathered before any product (an all-gather by hand)."""
    return pmapped(lambda a, b: _ring_products(a, b, True), "i")(x, w)


def _parts_to_owners(v):
    """One all_to_all over 'i' that sends each device's k-th block of columns of ``v`` to device k."""
    parts = v.reshape(v.shape[0], DEVICES, -1).transpose(1, 0, 2)
    return lax.all_to_all(parts, "i", 0, 0)


def all_to_all_of_partial_sums(x, w):
    """A reduce-scatter by hand: each device's partial product, its column blocks sent to their owners and summed."""
    return pmapped(lambda a, b: _parts_to_owners(a @ b).sum(0), "i")(x, w)


def all_to_all_of_inputs(x, w):
    """A gather by another name: x's block itself sent out in pieces, the product taken after."""
    return pmapped(lambda a, b: _parts_to_owners(a).reshape(a.shape[0], -1) @ b[:, :a.shape[1]], "i")(x, w)


def all_to_all_of_inputs_in_a_branch(x, w):
    """Round 43: the gather of x's blocks inside a cond's branch, the product after the cond."""
    def per_device(a, b):
        got = lax.cond(lax.axis_index("i") >= 0, _parts_to_owners, lambda v: jnp.zeros_like(_parts_to_owners(v)), a)
        return got.reshape(a.shape[0], -1) @ b[:, :a.shape[1]]
    return pmapped(per_device, "i")(x, w)


def all_to_all_multiplied_by_exp_and_log(x, w):
    """Round 43: what arrives multiplied with no multiply, as exp(log a + log b)."""
    def per_device(a, b):
        got = _parts_to_owners(jnp.abs(a) + 1).reshape(a.shape[0], -1)
        return jnp.exp(jnp.log(got) + jnp.log(jnp.abs(b[0, :got.shape[1]]) + 1))
    return pmapped(per_device, "i")(x, w)


def all_to_all_summed_in_a_loop(x, w):
    """A reduce-scatter by hand whose blocks a loop adds up one at a time (indexed by its counter), halved and
    doubled: only sums of what arrived, beside a counter that is no part of it."""
    def per_device(a, b):
        parts = _parts_to_owners(a @ b)
        total = lax.fori_loop(0, DEVICES, lambda k, acc: acc + parts[k] * 0.5, jnp.zeros_like(parts[0]))
        return 2 * total
    return pmapped(per_device, "i")(x, w)


def all_to_all_of_scaled_partial_sums(x, w):
    """Round 45: a reduce-scatter by hand whose partial sums are scaled by a constant before they are sent, and
    summed as a ones-vector einsum where they arrive: sums of products all the same."""
    def per_device(a, b):
        got = _parts_to_owners((a @ b) / DEVICES)
        return jnp.einsum("k,kbf->bf", jnp.ones((DEVICES,), got.dtype), got) * DEVICES
    return pmapped(per_device, "i")(x, w)


def all_to_all_of_permuted_inputs_reduced_by_products(x, w):
    """Round 45: x's blocks sent as "products" (multiplied by an anti-identity matrix, a permutation), multiplied
    where they arrive inside a variadic reduce whose reducer multiplies before it adds."""
    def per_device(a, b):
        flipped = a @ jnp.flip(jnp.eye(a.shape[1], dtype=a.dtype), 0)
        got = jnp.flip(_parts_to_owners(flipped).reshape(a.shape[0], -1), 1)
        rows, cols = jnp.broadcast_to(got[:, :, None], got.shape + (3,)), jnp.broadcast_to(b[None, :8, :3],
                                                                                           got.shape + (3,))
        zero = jnp.zeros((), a.dtype)
        return lax.reduce((rows, cols), (zero, zero), lambda p, q: (p[0] + q[0] * q[1], q[1]), (1,))[0]
    return pmapped(per_device, "i")(x, w)


PROGRAMS = {
    "dot_with_squeeze": (dot_with_squeeze, (np.ones(16, np.float32), np.ones(16, np.float32))),
    "dot_read_from_the_last_device": (dot_read_from_the_last_device, (np.ones(16, np.float32),
                                                                      np.ones(16, np.float32))),
    "pmean_of_a_whole_answer": (pmean_of_a_whole_answer, (np.ones(16, np.float32), np.ones(16, np.float32))),
    "merged_psums": (merged_psums, (np.ones((DEVICES, 3), np.float32),)),
    "pmean_only": (pmean_only, (np.ones((DEVICES, 5), np.float32),)),
    "gathered_and_averaged": (gathered_and_averaged, (np.ones((DEVICES, 5), np.float32),)),
    "gathered_and_summed": (gathered_and_summed, (np.ones((DEVICES, 5), np.float32),)),
    "ring_fori": (ring_fori, (np.ones((DEVICES, 6), np.float32),)),
    "dot_fori_elements": (dot_fori_elements, (np.ones((DEVICES, 10), np.float32), np.ones((DEVICES, 10), np.float32))),
    "dot_complex": (dot_complex, (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 2, 3), np.float32),
                                  np.ones((DEVICES, 3, 5), np.float32))),
    "nested_loops": (nested_loops, (np.ones((DEVICES, 7), np.float32),)),
    "while_unknown": (while_unknown, (np.ones((DEVICES, 2), np.float32),)),
    "cond_branch": (cond_branch, (np.ones((DEVICES, 3), np.float32),)),
    "all_gather_sum": (all_gather_sum, (np.ones((DEVICES, 10), np.float32),)),
    "mesh_matmul": (mesh_matmul, (np.ones((6, 8), np.float32), np.ones((8, 3), np.float32))),
    "psum_of_a_constant": (psum_of_a_constant, (np.ones((DEVICES, 5), np.float32),)),
    "psum_of_times_zero": (psum_of_times_zero, (np.ones((DEVICES, 5), np.float32),)),
    "psum_times_zero": (psum_times_zero, (np.ones((DEVICES, 5), np.float32),)),
    "psum_of_a_difference": (psum_of_a_difference, (np.ones((DEVICES, 5), np.float32),)),
    "jit_contraction": (jit_contraction, (np.ones((6, 8), np.float32), np.ones((8, 10), np.float32))),
    "split_outputs": (split_outputs, (np.ones((6, 8), np.float32),)),
    "scatter_rows": (scatter_rows, (np.ones((8, 8), np.float32),)),
    "scatter_columns": (scatter_columns, (np.ones((8, 8), np.float32),)),
    "gather_over_data": (gather_over_data, (np.ones((8, 6), np.float32),)),
    "gather_over_model": (gather_over_model, (np.ones((8, 6), np.float32),)),
    "gather_untiled": (gather_untiled, (np.ones((8, 6), np.float32),)),
    "ring_backward": (ring_backward, (np.ones((DEVICES, 6), np.float32),)),
    "ring_matmul": (ring_matmul, (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_barrier": (ring_matmul_barrier, (np.ones((DEVICES, 2, 3), np.float32),
                                                  np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_decoys": (lambda x, w: pmapped(_ring_with_decoys, "i")(x, w),
                           (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_both_ways": (lambda x, w: pmapped(lambda a, b: _both_ways(a, b, False), "i")(x, w),
                              (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_both_ways_barrier": (lambda x, w: pmapped(lambda a, b: _both_ways(a, b, True), "i")(x, w),
                                      (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_two_chains_barrier": (lambda x, w: pmapped(_two_chains, "i")(x, w),
                                       (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_both_ways_whole": (lambda x, w: pmapped(_both_ways_whole, "i")(x, w),
                                    (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "ring_matmul_both_ways_merged": (lambda x, w: pmapped(_both_ways_merged, "i")(x, w),
                                     (np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 5), np.float32))),
    "all_to_all_of_partial_sums": (all_to_all_of_partial_sums, (np.ones((DEVICES, 2, 3), np.float32),
                                                                np.ones((DEVICES, 3, 8), np.float32))),
    "all_to_all_of_inputs": (all_to_all_of_inputs, (np.ones((DEVICES, 2, 8), np.float32),
                                                    np.ones((DEVICES, 8, 8), np.float32))),
    "all_to_all_of_inputs_in_a_branch": (all_to_all_of_inputs_in_a_branch, (np.ones((DEVICES, 2, 8), np.float32),
                                                                            np.ones((DEVICES, 8, 8), np.float32))),
    "all_to_all_multiplied_by_exp_and_log": (all_to_all_multiplied_by_exp_and_log, (
        np.ones((DEVICES, 2, 8), np.float32), np.ones((DEVICES, 8, 8), np.float32))),
    "all_to_all_summed_in_a_loop": (all_to_all_summed_in_a_loop, (np.ones((DEVICES, 2, 3), np.float32),
                                                                  np.ones((DEVICES, 3, 8), np.float32))),
    "all_to_all_of_scaled_partial_sums": (all_to_all_of_scaled_partial_sums, (
        np.ones((DEVICES, 2, 3), np.float32), np.ones((DEVICES, 3, 8), np.float32))),
    "all_to_all_of_permuted_inputs_reduced_by_products": (all_to_all_of_permuted_inputs_reduced_by_products, (
        np.ones((DEVICES, 2, 8), np.float32), np.ones((DEVICES, 8, 8), np.float32))),
}


def main(names):
    jax.config.update("jax_num_cpu_devices", DEVICES)
    os.makedirs(OUT, exist_ok=True)
    for name in names or PROGRAMS:
        fn, args = PROGRAMS[name]
        specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in args)
        text = run_program(export_program(fn, specs, name), [args], name)["hlo"]
        with open(os.path.join(OUT, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {name}.txt ({len(text)} characters)")


if __name__ == "__main__":
    main(sys.argv[1:])
