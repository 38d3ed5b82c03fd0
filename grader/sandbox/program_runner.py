"""The clean worker's one job: compile and run a program a student's worker handed over as data.

A clean worker is forked from the same zygote as the student's worker (same backend configuration,
same device count) but never imports student code: no submission on its ``sys.path``, its own
empty folder as cwd, HOME and TMPDIR, no probes. It deserialises the ``jax.export`` blob, refuses
it if it could run code on the host (:mod:`grader.sandbox.program_check`) or if it does not take
the test's inputs, names every operation by what it is (:mod:`grader.sandbox.program_labels`),
compiles it once for this worker's devices and runs it on each set of inputs the grader sent: the
test's, and at least one the grader drew for this run, which the student's process never saw. It
then measures which of the program's collectives, and whether its per-device computations, the
answer depends on (:mod:`grader.sandbox.program_ablation`), and which of its ppermutes send nothing an
earlier one brought (:mod:`grader.sandbox.program_ring_steps`), and returns every set's values, the
compiled HLO text with those collectives marked (idle, fresh), and whether the program holds a per-device
computation (jax.pmap or jax.shard_map) that the answer needs: the structural checks and the value checks of a case read the same program, and
every fact about it comes from this process.

Anything that goes wrong here is the program's failure (``not_exportable`` with the reason); the
grader replaces this worker after any failure, so a program that upset it cannot reach the next case.
"""

from __future__ import annotations

import math
import re

import numpy as np

from grader.errors import StudentFailure
from grader.layout import plural
from grader.protocol import FRESH_MARK, IDLE_MARK
from grader.sandbox import program_held, program_outside, program_probe, program_ring_steps, program_sites
from grader.sandbox.program_check import (MESH_AXIS, composites_as_calls, holds_manual_computation,
                                          module_operations, parse, refusal)
from grader.sandbox.program_ablation import EXACT, Tolerance, measure
from grader.sandbox.program_labels import mark, relabel, surviving
from grader.sandbox.student_code import first_line


def _refuse(program: str, why: str) -> StudentFailure:
    return StudentFailure("not_exportable", f"{program} was refused: {why}")


# The probe runs once a variant, on small inputs, so it is compiled the cheapest way XLA offers: LLVM at its
# lowest level (about a quarter faster), and on CPU the classic code generation in place of the MLIR fusion
# emitters, which set up an MLIR context of every dialect for each compile (about a third faster again), in one
# LLVM module rather than split for parallel code generation (about a fifth faster again for these small
# modules; bench/ablation.py, docs/benchmarks.md). No optimisation changes an answer by the measurement's
# tolerance. A probe these options fail to compile is compiled again with the program's own
# (:func:`run_program`), so they can never make a collective count.
VARIANT_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True,
                   "xla_cpu_use_fusion_emitters": False, "xla_cpu_parallel_codegen_split_count": 1}

# The program is compiled with XLA's combiners off: a combiner merges independent collectives into one
# instruction (the program's psum of the loss with an all-reduce the partitioner added for a sum written outside
# the per-device code), which would count the partitioner's data as the program's own, and the program's
# collectives as one. Off, each collective is one instruction, named by what it came from; what each moves is
# the same. The reference's program is compiled the same way.
SEPARATE = "cpu-all-reduce-combiner,all-reduce-combiner,all-gather-combiner,reduce-scatter-combiner"
# On CPU XLA's optimization-barrier expander is off too, so a barrier the program writes stays in the text the
# suites read (what waits for what: grader.suite.hlo.overlapped). A TPU runs no opt-barrier instruction (XLA
# refuses to compile one there), so on an accelerator the barrier is expanded and such a wait is not seen.
KEEP_BARRIERS = "cse_barrier_expander"


def compile_options(platform: str) -> dict:
    """The options the program (and the reference's) is compiled with on ``platform`` ("cpu", "tpu", "gpu")."""
    return {"xla_disable_hlo_passes": SEPARATE + (f",{KEEP_BARRIERS}" if platform == "cpu" else "")}

_MODULE_MESH = re.compile(r'sdy\.mesh @[\w.$-]+ = <\[((?:"[^"]+"=\d+(?:, )?)+)\]>')


def _module_mesh(exported) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """(axis names, sizes) of the first mesh the module declares inside (a program whose inputs and
    outputs name no sharding may still lay values out on a mesh: jit(f) of an f that jits with
    shardings, or uses shard_map), or None if it declares none."""
    m = _MODULE_MESH.search(exported.mlir_module())
    if not m:
        return None
    axes = MESH_AXIS.findall(m.group(1))
    return tuple(name for name, _ in axes), tuple(int(size) for _, size in axes)


def _mesh(exported, devices):
    """This worker's devices arranged as the mesh the program was exported with (JAX keeps its axis
    names, sizes and types, not which devices it held): the mesh its inputs or outputs name, else the
    one its module declares, else the devices in one axis. The compiled program's output shardings
    are read back on this mesh, so it must be one they can be written on."""
    from jax.sharding import Mesh

    for sharding in (*exported._in_named_shardings, *exported._out_named_shardings):
        if sharding is not None and sharding.mesh.axis_names:
            abstract = sharding.mesh
            return Mesh(np.array(devices[:abstract.size]).reshape(abstract.axis_sizes), abstract.axis_names,
                        axis_types=abstract.axis_types)
    declared = _module_mesh(exported)
    if declared and math.prod(declared[1]) == exported.nr_devices:
        names, sizes = declared
        return Mesh(np.array(devices[:exported.nr_devices]).reshape(sizes), names)
    return Mesh(np.array(devices[:exported.nr_devices]), ("devices",))


def _spec(entry):
    """A PartitionSpec from its plain form: a list of None, an axis name, or a list of axis names."""
    from jax.sharding import PartitionSpec

    return PartitionSpec(*(tuple(e) if isinstance(e, list) else e for e in entry))


def _arrival(exported, mesh, arrives, program: str) -> list:
    """The sharding each input leaf arrives in: ``arrives`` gives one entry per positional input (None:
    whole on every device; a PartitionSpec as a list, on the mesh the program declares), None: all whole."""
    from jax.sharding import NamedSharding

    if arrives is None:
        return [None] * exported.in_tree.num_leaves
    wanted = {axis for entry in arrives if entry for part in entry
              for axis in (part if isinstance(part, list) else [part]) if axis is not None}
    if not wanted <= set(mesh.axis_names):
        raise _refuse(program, f"its inputs arrive split over the mesh axes {', '.join(sorted(map(repr, wanted)))}, "
                            f"and it runs on a mesh of {', '.join(map(repr, mesh.axis_names))}: build the "
                            "computation on the mesh the task gives")
    return [None if entry is None else NamedSharding(mesh, _spec(entry)) for entry in arrives]


def _shardings(exported, mesh, arrives=None, program: str = ""):
    """Where each input goes and each output comes from: the exported shardings on this worker's
    devices. An input the program left unspecified arrives as the task hands it over (``arrives``),
    else replicated (as a NumPy argument to jax.jit is); a program built for its inputs laid out
    another way than the task's is refused. An output left unspecified is wherever the compiled program
    puts it."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    replicated = NamedSharding(mesh, PartitionSpec())
    ins = []
    for own, task, aval in zip(exported.in_shardings_jax(mesh), _arrival(exported, mesh, arrives, program),
                               exported.in_avals):
        if own is not None and task is not None and not own.is_equivalent_to(task, aval.ndim):
            raise _refuse(program, "it was built for its inputs laid out otherwise than the task hands them over")
        ins.append(own or task or replicated)
    return jax.tree.unflatten(exported.in_tree, ins)[0], jax.tree.unflatten(exported.out_tree,
                                                                           list(exported.out_shardings_jax(mesh)))


def _parts(sharding) -> int:
    """Into how many parts an input's layout splits it (1: every device holds all of it)."""
    spec = getattr(sharding, "spec", ())
    sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes)) if hasattr(sharding, "mesh") else {}
    return math.prod(sizes.get(axis, 1) for entry in spec if entry is not None
                     for axis in (entry if isinstance(entry, tuple) else (entry,)))


def _avals_text(avals) -> str:
    return ", ".join(f"{a.dtype}[{','.join(map(str, a.shape))}]" for a in avals)


def _fit_inputs(exported, inputs: tuple, program: str) -> tuple:
    """``inputs`` in the dtypes the program takes (JAX's: float32 for a float64 array, as jax.jit
    makes it), after checking the program takes exactly such inputs; the student's process may have
    handed over a program built for others."""
    import jax

    leaves, tree = jax.tree.flatten((tuple(inputs), {}))
    wanted = [jax.ShapeDtypeStruct(np.shape(a), jax.dtypes.canonicalize_dtype(np.asarray(a).dtype)) for a in leaves]
    avals = exported.in_avals
    if tree != exported.in_tree or [(a.shape, a.dtype) for a in avals] != [(w.shape, w.dtype) for w in wanted]:
        raise _refuse(program, f"it takes {_avals_text(avals) or 'no inputs'}, not the test's inputs "
                            f"({_avals_text(wanted)})")
    return jax.tree.unflatten(tree, [np.asarray(a, w.dtype) for a, w in zip(leaves, wanted)])[0]


def _tolerance(given) -> Tolerance:
    """The case's (rtol, atol) as sent, or none (:data:`EXACT`) if it is not two finite numbers of at least 0."""
    try:
        rtol, atol = (float(v) for v in given)
    except (TypeError, ValueError):
        return EXACT
    return (rtol, atol) if all(math.isfinite(v) and v >= 0 for v in (rtol, atol)) else EXACT


def _attempt(call):
    """``call()``, or None if it raises (a probe's variant that does not run: its collective mattered); the memory
    limit still ends the case."""
    try:
        return call()
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - any failure of a variant's run is the variant's
        return None


def run_program(blob: np.ndarray, input_sets: list, name: str, arrives=None, ablate: bool = True,
                tolerance=None, called: str = "") -> dict:
    """{"values": what the program returns for each set of inputs in ``input_sets``, laid out as
    ``arrives`` says (:func:`_shardings`), "hlo": its compiled HLO text, idle collectives marked,
    "manual": whether it holds a jax.pmap or jax.shard_map that the answer needs, "holds_manual": whether it
    holds one at all, "held": the share of each
    input one device's per-device computation receives (grader.sandbox.program_held), "outside" and "inside": the
    arithmetic the program writes outside its per-device code, spread over the devices, and inside it, per device
    (grader.sandbox.program_outside)}. Without ``ablate``
    (the reference's program, whose work alone is compared) nothing is marked idle and "manual" is
    read from the program's operations only. ``tolerance``: the (rtol, atol) the case checks the values to; a
    collective whose results move the answers by less is idle (grader.sandbox.program_ablation.same_answer).
    ``called``: how a refusal names the program (default "``name``'s program"; a suite's probe is no name a student
    knows, so the grader passes the call it names instead)."""
    import dataclasses

    import jax

    program = called or f"{name}'s program"
    if not isinstance(blob, np.ndarray) or blob.dtype != np.uint8 or blob.ndim != 1:
        raise _refuse(program, "it is not a serialized program")
    try:
        exported = jax.export.deserialize(bytearray(blob.tobytes()))
        module = parse(exported.mlir_module())
        composites_as_calls(module)
        operations = module_operations(module)
    except Exception as exc:  # noqa: BLE001 - bytes that do not parse are the sender's fault
        raise _refuse(program, f"it cannot be read as a jax.export program ({first_line(exc, 160)})") from None
    why = refusal(operations)
    if why is None and (exported.ordered_effects or exported.unordered_effects):
        why = f"it has side effects ({', '.join(map(str, exported.ordered_effects + exported.unordered_effects))})"
    if why is not None:
        raise _refuse(program, why)
    devices = jax.devices()
    if not 1 <= exported.nr_devices <= len(devices):
        raise _refuse(program, f"it was built for {plural(exported.nr_devices, 'device')}; this case has "
                               f"{len(devices)}")
    if exported.nr_devices > 1:  # a pmap over fewer rows than the case has devices runs on as many (the grader
        devices = devices[:exported.nr_devices]  # refuses any count its test did not ask for: "devices")
    sets = [_fit_inputs(exported, inputs, program) for inputs in input_sets]
    shares = program_held.shares(module)  # before relabel, which drops the names of the inputs
    outside, inside = program_outside.work(module, exported.nr_devices)
    labelled, held = relabel(module)
    exported = dataclasses.replace(exported, mlir_module_serialized=labelled)
    try:
        mesh = _mesh(exported, devices)
        in_shardings, out_shardings = _shardings(exported, mesh, arrives, program)
        shares = program_held.as_arrived(shares, [1 / _parts(s) for s in jax.tree.leaves(in_shardings)])
        compiled = jax.jit(exported.call, in_shardings=in_shardings, out_shardings=out_shardings).lower(
            *sets[0]).compile(compile_options(devices[0].platform))
        values = [compiled(*inputs) for inputs in sets]
        jax.block_until_ready(values)
    except (MemoryError, StudentFailure):
        raise  # the memory limit, or a refusal that already names why
    except Exception as exc:  # noqa: BLE001 - a program that does not compile or run for these inputs
        if "RESOURCE_EXHAUSTED" in str(exc):
            raise  # reported as the memory limit, like any call
        raise StudentFailure("not_exportable", f"{program} does not run on the test's inputs: "
                             f"{first_line(exc, 200)}", None, type(exc).__name__) from None
    text = compiled.as_text()
    if not ablate:
        holds = holds_manual_computation(operations)
        return {"values": values, "hlo": text, "manual": holds, "holds_manual": holds, "held": shares,
                "outside": outside, "inside": inside, "devices": exported.nr_devices}

    def compile_probe(probe):
        """A function of a list of modes vectors giving, for each, the probe's answers to each set of inputs (its
        lane B, if it has one, on the first), or None where it does not run: the probe
        (grader.sandbox.program_probe) compiled once, with :data:`VARIANT_OPTIONS`, else (they failed) as the
        program itself was. Each run is waited for before the next starts: runs of collective programs queued by
        the hundred stall emulated devices."""
        from jax.sharding import NamedSharding, PartitionSpec

        lanes = 2 if probe.donor else 1
        donor = tuple(sets[0]) if probe.donor else ()
        lowered = jax.jit(program_probe.exported(exported, probe).call,
                          in_shardings=(*in_shardings * lanes, NamedSharding(mesh, PartitionSpec())),
                          out_shardings=out_shardings).lower(*sets[0], *donor, np.zeros(len(probe.sites), np.int32))
        try:
            runnable = lowered.compile(VARIANT_OPTIONS)
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - the cheap options' failure is not the program's
            runnable = lowered.compile()

        def answers(chosen: list) -> list:
            return [_attempt(lambda modes=modes: jax.block_until_ready([runnable(*inputs, *donor, modes)
                                                                        for inputs in sets])) for modes in chosen]

        return answers

    kept, sites = surviving(text, held), program_sites.read(module)
    steps = program_ring_steps.variants(sites, kept)
    idle, manual_needed, answers = measure(labelled, sites, kept, compile_probe, sets, values, also=steps,
                                           tolerance=_tolerance(tolerance))
    starts = program_ring_steps.fresh(steps, answers, values, idle)
    holds = holds_manual_computation(operations)
    return {"values": values, "hlo": mark(mark(text, idle, IDLE_MARK), starts, FRESH_MARK),
            "manual": holds and manual_needed, "holds_manual": holds, "held": shares, "outside": outside,
            "inside": inside, "devices": exported.nr_devices}
