"""What a program handed over by a student's worker may contain before a clean worker compiles it.

The clean worker (:mod:`grader.sandbox.program_runner`) runs no student Python, but a StableHLO
module can still ask the host to run code: a host callback is a ``custom_call`` to
``xla_ffi_python_cpu_callback`` (or its GPU twin) carrying an index into the *sending* process's
table of Python functions, and other custom calls name arbitrary C++ handlers registered in the
process. Infeed, outfeed, send and recv move data between the program and the host. So every
operation of the module is read before anything is compiled, and the program is refused if it has
an operation of a dialect outside :data:`DIALECTS`, a host transfer, or a custom call whose target
is not in :data:`CUSTOM_CALLS`.

The allowlist is what correct solutions of this course produce on CPU with JAX 0.10 (pmap,
shard_map, jit with shardings, at 1 to 8 devices): with the default Shardy partitioner no custom
call at all, with the GSPMD partitioner (``jax_use_shardy_partitioner=False``) the three sharding
annotations below, which XLA's partitioner consumes and which run nothing. Everything else is
refused with its name, host callbacks with what to do instead; LAPACK kernels (``jnp.linalg``) are
refused too, since no task of the course needs them.
"""

from __future__ import annotations

import functools
import re

# Dialects whose operations are computation, control flow or sharding annotations.
DIALECTS = frozenset({"builtin", "func", "stablehlo", "chlo", "sdy"})
# Operations that move data between the program and the host.
HOST_TRANSFERS = frozenset({"stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv"})
CUSTOM_CALL = "stablehlo.custom_call"
# Custom-call targets that only annotate shardings for XLA's partitioner.
CUSTOM_CALLS = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
CALLBACK_TARGETS = ("xla_ffi_python_cpu_callback", "xla_ffi_python_gpu_callback", "xla_python_cpu_callback",
                    "xla_python_gpu_callback")


def refusal(operations) -> str | None:
    """Why a program with these operations may not run, or None. ``operations`` yields
    (op name, custom-call target or None) pairs, one per operation of the module."""
    for name, target in operations:
        if name.split(".", 1)[0] not in DIALECTS:
            return f"it contains an operation the grader does not run ({name})"
        if name in HOST_TRANSFERS:
            return f"it exchanges data with the host ({name}), which a graded program may not do"
        if name == CUSTOM_CALL and target not in CUSTOM_CALLS:
            if target in CALLBACK_TARGETS:
                return ("it calls back into Python on the host (jax.pure_callback, io_callback, jax.debug.print "
                        "or jax.debug.callback); compute with jax.numpy and lax only")
            return f"it calls the external function {target!r}, which the grader does not run"
    return None


# Operations by which a program runs a per-device function on every device (jax.pmap and jax.shard_map
# lower to the first with the Shardy partitioner, to a call of the second with GSPMD).
MANUAL = "sdy.manual_computation"
MANUAL_CUSTOM_CALL = "SPMDFullToShardShape"


def holds_manual_computation(operations) -> bool:
    """Whether the program runs a per-device function on its devices (a jax.pmap or jax.shard_map):
    read from the program's own operations, so nothing the student's process says about it counts."""
    return any(name == MANUAL or (name == CUSTOM_CALL and target == MANUAL_CUSTOM_CALL) for name, target in operations)


@functools.cache
def context():
    """One MLIR context with JAX's dialects, made once per process (each costs about 2 ms)."""
    from jax._src.interpreters import mlir

    return mlir.make_ir_context()


MESH_AXIS = re.compile(r'"([^"]+)"=(\d+)')  # an axis of an sdy.mesh and its size: "data"=2


def parse(module_text: str):
    """The StableHLO module of ``module_text``, in :func:`context`."""
    from jaxlib.mlir import ir

    with context():
        return ir.Module.parse(module_text)


def composites_as_calls(module) -> None:
    """Each ``stablehlo.composite`` of the parsed module (``jax.lax.composite``) replaced, in place, by a call of
    its decomposition, the function that computes it: what XLA runs, and what every reading of the module
    (per-device computations, work outside them, input shares, collectives) follows as an ordinary call."""
    from jaxlib.mlir import ir

    def rewrite(block) -> None:
        for op in list(block.operations):
            op = op.operation
            for region in op.regions:
                for inner in region.blocks:
                    rewrite(inner)
            if op.name == "stablehlo.composite":
                with ir.InsertionPoint(op), op.location:
                    call = ir.Operation.create("func.call", results=[r.type for r in op.results],
                                               operands=list(op.operands),
                                               attributes={"callee": op.attributes["decomposition"]})
                for old, new in zip(op.results, call.results):
                    old.replace_all_uses_with(new)
                op.erase()

    with context():
        for op in module.body.operations:
            for region in op.operation.regions:
                for block in region.blocks:
                    rewrite(block)


def functions(module) -> dict:
    """The functions of a parsed module by name (``main`` and those it calls); call in :func:`context`."""
    from jaxlib.mlir import ir

    return {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
            if op.operation.name == "func.func"}


def manual_computations(module) -> list:
    """The module's per-device computations (a jax.pmap or jax.shard_map, as Shardy writes them), in the
    order a walk of it meets them: the numbers by which the clean worker's measurements name them."""
    from jaxlib.mlir import ir

    found = []

    def visit(op):
        if op.operation.name == MANUAL:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def module_operations(module):
    """(op name, custom-call target or None) for every operation of a parsed module."""
    from jaxlib.mlir import ir

    found: list[tuple[str, str | None]] = []

    def visit(op):
        op = op.operation
        target = None
        if op.name == CUSTOM_CALL and "call_target_name" in op.attributes:
            target = ir.StringAttr(op.attributes["call_target_name"]).value
        found.append((op.name, target))
        return ir.WalkResult.ADVANCE

    with context():
        module.operation.walk(visit)
    return found
