"""Tasks ring and ring_optimal: moving data around a ring of devices with lax.ppermute.

These are *per-device* functions: they run inside ``jax.pmap(..., axis_name=...)`` and see one
device's block. The grader wraps them itself, with an axis name of its choosing:

    f = jax.pmap(lambda block: ring_shift(block, "ring", shift=1), axis_name="ring")
    f(x)    # x has shape (n_devices, ...): row i lives on device i

So use the ``axis_name`` you are given (not 'batch' or 'i'), and ask the axis how big it is with
``lax.axis_size(axis_name)`` (your position on it is ``lax.axis_index(axis_name)``); never assume 4
devices. The grader runs on 1, 2, 4 and 8, and also on a ring of some of the machine's devices (x with
3 rows on a machine of 4): the axis is as long as x, whatever jax.device_count() says.

1. ``ring_shift(x, axis_name, shift=1)``: device i's block lands on device (i + shift) mod n, for
   any integer shift, negative ones too. Seen from outside pmap, on 4 devices:

       >>> f(jnp.array([[0.], [1.], [2.], [3.]]))            # shift=1
       [[3.], [0.], [1.], [2.]]                                # what np.roll(x, 1, axis=0) gives

   Use one ``lax.ppermute(x, axis_name, perm)``, where perm lists (source, destination) pairs.
   The chapter's example writes ``perm=[(i, (i+1) % 4) for i in range(4)]``: that is wrong on any
   other number of devices (on 2 it is an error, on 8 half the devices receive zeros).

2. ``ring_allreduce(x, axis_name)``: every device returns the sum of all devices' blocks (same
   shape and dtype as x: int32 blocks give int32 sums, so accumulate in x's dtype), what
   ``lax.psum(x, axis_name)`` returns, built from ``ring_shift`` alone: pass the blocks around
   the ring n - 1 times and add up what arrives. At each step every device sends on what reached
   it at the step before (a shift of 1); sending its own block k places along at step k
   (``shift=k``) gives the same sum but is not a ring (on real links the k-th send crosses k of
   them), and the grader, which follows the data from one ppermute to the next, tells it apart.
   Every step sends to the same neighbour: recursive doubling (partners 1, 2, 4 places away) is
   another all-reduce, not this one, and the grader reads each ppermute's pairs.
   No psum, pmean or all_gather: the grader reads the compiled program and finds them. It counts
   only the ppermutes your answer depends on, and those must send at least 2(n - 1)/n of the block
   per device (what any ring all-reduce sends; n - 1 whole blocks is more) and at most n - 1
   blocks. A ``lax.fori_loop(0, n - 1, ...)`` keeps the program small.

3. Extra credit, ``ring_allreduce_optimal(x, axis_name)``: the same sum, as real all-reduce
   implementations do it. Task 2 sends the whole block n - 1 times. Instead, cut the flattened
   block into n chunks (pad it to a multiple of n, and cut the padding off at the end), then:
   reduce-scatter: n - 1 steps in which every device passes one chunk to its neighbour, who
   adds it to its own copy of that chunk; afterwards device i holds the complete sum of one chunk.
   all-gather: n - 1 more steps passing the completed chunks around until every device has all
   of them. Each device then sends 2(n - 1) chunks of size/n, about 2x the block whatever n is,
   instead of (n - 1)x. The grader checks the bytes your ppermutes send (read from the compiled
   program, loops included, counting only those your answer depends on) are at most
   2(n - 1) * ceil(size / n) and at least 2(n - 1) * (size // n) elements, on a size the device
   count divides (1000) and one it does not (1001). Like ring_allreduce, it keeps x's dtype and is
   a ring: every step shifts by the same 1 (or -1), passing on what arrived; recursive halving and
   doubling sends as few bytes but is another algorithm.

Try it on 4 CPU devices: jax.config.update("jax_num_cpu_devices", 4) before your first JAX call.
"""

import jax.numpy as jnp
from jax import lax


def ring_shift(x, axis_name, shift=1):
    raise NotImplementedError("ring_shift: one lax.ppermute whose perm is built from lax.axis_size(axis_name)")


def ring_allreduce(x, axis_name):
    raise NotImplementedError("ring_allreduce: n - 1 ring_shifts, adding up what arrives")


def ring_allreduce_optimal(x, axis_name):
    raise NotImplementedError("ring_allreduce_optimal (extra credit): reduce-scatter, then all-gather")


if __name__ == "__main__":  # python ring.py: how to grade this task
    from grader.cli.stub import explain
    explain(__file__)
