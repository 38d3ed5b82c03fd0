"""The clean worker runs a program whose inputs and outputs name no sharding but whose body lays its
values out on a mesh (a jit of a function that jits with out_shardings, or that uses shard_map): the
compiled program's output layouts are read back on the mesh the module declares, not on one axis of
devices, which cannot hold a block of a 2 x 2 mesh."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT

from grader.sandbox import program_ablation, program_probe

RUN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
split = NamedSharding(mesh, P("data", "model"))

def blocks(x, w):
    return jax.jit(jnp.matmul, out_shardings=split)(x, w)

x, w = np.arange(32, dtype=np.float32).reshape(4, 8), np.ones((8, 6), np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, w))
out = run_program(export_program(blocks, specs, "blocks"), [(x, w)], "blocks")
print(json.dumps({{"right": bool(np.allclose(out["values"][0], x @ w)), "shapes": hlo.output_shapes(out["hlo"])}}))
"""


def test_a_result_split_over_a_mesh_the_inputs_do_not_name_comes_back_whole():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(RUN.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"right": True, "shapes": [[2, 3]]}


# Each program's collectives of its own, as (opcode, idle) in the compiled HLO the clean worker returns:
# idle where replacing its result by zeros left the answer as it was, whatever the shape of the trick.
ABLATION = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", {devices})
import jax.numpy as jnp
import numpy as np
from jax import lax
sys.path[:0] = [{root!r}]
from grader.sandbox.program_export import export_program
from grader.sandbox import program_runner
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo
{setup}
n = jax.device_count()
split = lambda v: jnp.pad(v, (0, -v.shape[0] % n)).reshape(n, -1)

def per_device(body):
    return lambda x, y: jax.pmap(body, axis_name="i")(split(x), split(y))[0]

def _median(p, q, r):
    return jnp.maximum(jnp.minimum(p, q), jnp.minimum(jnp.maximum(p, q), r))

PROGRAMS = {{
    "honest": per_device(lambda a, b: lax.psum(jnp.dot(a, b), "i")),
    "of_difference": lambda x, y: jnp.dot(x, y) + per_device(lambda a, b: lax.psum(jnp.dot(a - a, b), "i"))(x, y),
    "multiplied_away": lambda x, y: jnp.dot(x, y) + per_device(lambda a, b: lax.psum(jnp.dot(a, b), "i") * 0)(x, y),
    "subtracted_from_itself": lambda x, y: jnp.dot(x, y) + per_device(
        lambda a, b: lax.psum(jnp.dot(a, b), "i") - lax.psum(jnp.dot(a, b), "i"))(x, y),
    "dead_branch": lambda x, y: jnp.dot(x, y) + per_device(
        lambda a, b: lax.cond(jnp.sum(a * 0) > 1, lambda: lax.psum(jnp.dot(a, b), "i"), lambda: 0.0))(x, y),
    "never_selected": lambda x, y: jnp.dot(x, y) + per_device(
        lambda a, b: jnp.where(jnp.sum(a * a) < -1, lax.psum(jnp.dot(a, b), "i"), 0.0))(x, y),
    "too_small_to_matter": lambda x, y: jnp.dot(x, y) + per_device(
        lambda a, b: lax.psum(jnp.dot(a, b), "i") * 1e-9)(x, y),
    # the value only tested: negated it passes the test as it is; zeros and its negation fail it alike
    "only_tested": lambda x, y: jnp.dot(x, y) * per_device(
        lambda a, b: jnp.where(lax.psum(a[0] + 1000, "i") != 0, 1.0, 2.0))(x, y),
    "tested_for_its_count": lambda x, y: jnp.dot(x, y) * per_device(
        lambda a, b: jnp.where(lax.psum(jnp.sum(a * 0) + 1, "i") == n, 1.0, 2.0))(x, y),
    # the sum only compared with a copy computed beside it: another set's sum fails the test as zeros do
    "tested_against_a_copy": lambda x, y: jnp.dot(x, y) * per_device(
        lambda a, b: jnp.where(jnp.abs(lax.psum(jnp.dot(a, b), "i") - jnp.dot(x, y)) < 1e-3, 1.0, 0.0))(x, y),
    # three copies of the sum voted on (their median): without any one the other two give the answer
    "voted": per_device(lambda a, b: _median(lax.psum(jnp.dot(a, b), "i"), lax.psum(jnp.dot(a, b) * 0.5, "i") * 2,
                                             lax.psum(jnp.dot(a, b) * 0.25, "i") * 4)),
    # moves the answer by 6e-5 of itself: more than a rounding error, less than a values check to 1e-4 sees
    "nudged": lambda x, y: jnp.dot(x, y) + 10 + per_device(lambda a, b: lax.psum(jnp.dot(a, b) + 5, "i") * 6e-5)(x, y),
}}
x, y, fx, fy = np.random.default_rng(0).normal(size=(4, 45)).astype(np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, y))
found = {{}}
for name, fn in PROGRAMS.items():
    if {names} is not None and name not in {names}:
        continue
    out = run_program(export_program(fn, specs, name), [(x, y), (fx, fy)], name, tolerance={tolerance})
    found[name] = [[c.op, c.idle] for c in hlo.collectives(out["hlo"]) if c.by_student]
print(json.dumps(found))
"""


def _printed(script: str, **fields) -> object:
    """What ``script`` (formatted with the repository root and ``fields``) prints as JSON, run in a process of
    its own on emulated CPU devices."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script).format(root=str(ROOT), **fields)],
                          capture_output=True, text=True, timeout=300,
                          env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _collectives_measured(devices: int, setup: str = "", names=None, tolerance=None) -> dict:
    return _printed(ABLATION, devices=devices, setup=setup, names=names, tolerance=tolerance)


def test_a_collective_counts_only_if_the_answer_changes_without_it():
    found = _collectives_measured(2)
    assert found["honest"] == [["all-reduce", False]]
    for trick in ("of_difference", "multiplied_away", "subtracted_from_itself", "dead_branch", "never_selected",
                  "too_small_to_matter", "only_tested", "tested_for_its_count",
                  "tested_against_a_copy"):
        assert found[trick] and all(idle for _, idle in found[trick]), (trick, found[trick])
    # replaced one at a time, each of three psums voted on by their median leaves the answer; replaced together
    # they do not, so all three count
    assert found["voted"] == [["all-reduce", False]] * 3
    # a psum moving the answer by 6e-5 of itself: with no case tolerance given, more than a rounding error
    assert found["nudged"] == [["all-reduce", False]]


# Round 60 (written apart): a standardisation by one psum of (sum, sum of squares, count), on 2 devices of one
# number each: every answer is -1 or 1, the same on both sets, so no transplant can tell; negated, the psum's
# ratios were the same and it read as idle; each element scaled by its own factor, they are not.
STANDARDISED = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
import numpy as np
from jax import lax
sys.path[:0] = [{root!r}]
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

def per_device(row):
    total = lax.psum(jnp.stack([jnp.sum(row), jnp.sum(row * row), jnp.asarray(row.size, row.dtype)]), "i")
    mean = total[0] / total[2]
    return (row - mean) * lax.rsqrt(total[1] / total[2] - mean * mean)

program = export_program(jax.pmap(per_device, axis_name="i"), (ArraySpec((2, 1), "float32"),), "standardize")
sets = [(np.array([[1.0], [2.0]], np.float32),), (np.array([[3.0], [5.0]], np.float32),)]
out = run_program(program, sets, "standardize")
print(json.dumps([[c.op, c.idle] for c in hlo.collectives(out["hlo"]) if c.by_student]))
"""


def test_without_a_transplant_a_collective_whose_results_an_answer_divides_by_each_other_counts():
    assert _printed(STANDARDISED) == [["all-reduce", False]]


def test_a_collective_that_moves_the_answer_by_less_than_the_case_checks_is_idle():
    """A psum added to a whole-program answer that moves it by 6e-5 of itself: to a case that checks values to
    rtol 1e-4 the program is right without it, so it earns nothing (without a case tolerance it counts: the test
    above)."""
    checked = _collectives_measured(2, names=("honest", "nudged"), tolerance=(1e-4, 1e-5))
    assert checked == {"honest": [["all-reduce", False]], "nudged": [["all-reduce", True]]}


def test_on_one_device_where_a_psum_is_the_identity_the_measurement_still_tells():
    found = _collectives_measured(1)
    assert found["honest"] == [["all-reduce", False]]
    for trick in ("of_difference", "multiplied_away", "dead_branch", "only_tested", "tested_for_its_count"):
        assert all(idle for _, idle in found[trick]), (trick, found[trick])


def test_a_variant_the_cheap_options_cannot_compile_is_compiled_as_the_program_was():
    """Options XLA refuses stand for any failure of the variants' cheap compile: the measurement is the same,
    so the options can never make a collective count that the program's own compile would find idle."""
    found = _collectives_measured(2, 'program_runner.VARIANT_OPTIONS = {"xla_no_such_option": 1}')
    assert found["honest"] == [["all-reduce", False]]
    for trick in ("multiplied_away", "dead_branch", "never_selected"):
        assert found[trick] and all(idle for _, idle in found[trick]), (trick, found[trick])


# A program that wants x whole on every device, given x as the task hands it over: whole, or its rows split
# over 'data' (then the program must gather them, and that is in its HLO); and given it on axes its mesh lacks.
ARRIVES = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
sys.path[:0] = [{root!r}]
from grader.errors import StudentFailure
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

mesh = jax.make_mesh((2, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

def whole_then_sum(x):
    return jnp.sum(jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P())) ** 2, axis=0)

x = np.arange(32, dtype=np.float32).reshape(8, 4)
blob = export_program(whole_then_sum, (ArraySpec(x.shape, str(x.dtype)),), "f")
found = {{}}
for name, arrives in (("whole", None), ("rows split", [["data", None]])):
    out = run_program(blob, [(x,)], "f", arrives)
    found[name] = {{"right": bool(np.allclose(out["values"][0], (x ** 2).sum(axis=0))),
                    "gathers": [c.op for c in hlo.collectives(out["hlo"]) if c.op == "all-gather"]}}
try:
    run_program(blob, [(x,)], "f", [["rows", None]])
except StudentFailure as refused:
    found["refused"] = refused.message
print(json.dumps(found))
"""


def test_inputs_arrive_as_the_task_hands_them_over():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(ARRIVES.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["whole"] == {"right": True, "gathers": []}
    assert found["rows split"] == {"right": True, "gathers": ["all-gather"]}
    assert "split over the mesh axes 'rows'" in found["refused"]


# Whether the program holds a per-device computation that its answer needs (Program.manual).
MANUAL = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
import numpy as np
sys.path[:0] = [{root!r}]
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec

PROGRAMS = {{
    "pmap": lambda x: jax.pmap(lambda row: row ** 2 + 1)(x),
    "idle pmap beside the work": lambda x: x ** 2 + 1 + 0 * jax.pmap(lambda row: row)(x),
    "pmap of nothing beside the work": lambda x: (x ** 2 + 1) + jax.pmap(lambda row: row - row)(x),
    "no pmap": lambda x: x ** 2 + 1,
    # zeros on the last set of inputs: the pmap is needed all the same, as the other sets tell
    "pmap, its answer zeros on one set": lambda x: jax.pmap(lambda row: row ** 2)(x),
    "pmap under a sine, its answer zeros on one set": lambda x: jnp.sin(jax.pmap(lambda row: row ** 2)(x)),
    # the pmap's answer only tested, the work beside it: negated, it fails the test as zeros do
    "pmap only tested beside the work": lambda x: jnp.where(jax.pmap(lambda row: row * 0 + 1000)(x) > 0, x ** 2 + 1, 0),
    # a 1 that multiplies the work: zeros and negation change the answer, the other set's 1 does not
    "pmap of a constant times the work": lambda x: (x ** 2 + 1) * jax.pmap(lambda row: jnp.where(row > -jnp.inf,
                                                                                                 1.0, 0.0))(x),
    # the work handed to the pmap beside x, and passed on where x equals itself: its result is its first operand
    "pmap passing on the work it was handed": lambda x: jax.pmap(lambda r, s: jnp.where(s == s, r, 0))(x ** 2 + 1, x),
    # two results multiplied: negating both leaves the answer as it was, and the pmap is needed all the same
    "pmap of two results multiplied": lambda x: (lambda a, b: a * b)(*jax.pmap(lambda row: (row + 1, row - 1))(x)),
}}
x, fresh = np.random.default_rng(0).normal(size=(2, 2, 3)).astype(np.float32)
sets = [(x,), (fresh,), (np.zeros_like(x),)]
print(json.dumps({{name: run_program(export_program(fn, (ArraySpec(x.shape, str(x.dtype)),), "f"), sets,
                                    "f")["manual"] for name, fn in PROGRAMS.items()}}))
"""


def test_a_pmap_counts_only_if_the_answer_needs_it():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MANUAL.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"pmap": True, "idle pmap beside the work": False,
                                       "pmap of nothing beside the work": False, "no pmap": False,
                                       "pmap, its answer zeros on one set": True,
                                       "pmap under a sine, its answer zeros on one set": True,
                                       "pmap only tested beside the work": False,
                                       "pmap of a constant times the work": False,
                                       "pmap passing on the work it was handed": False,
                                       "pmap of two results multiplied": True}


def test_the_probe_is_built_for_the_modes_asked_for_with_one_lane_if_two_do_not_compile(monkeypatch):
    """The variants share one probe, compiled when one first has to run, for the modes the variants asked for: a
    plan asking for more builds it again, one asking for no more does not; variants of the same modes run once. A
    probe with lane B that does not compile is compiled again with lane A alone (no transplant: its stand-in, the
    scaling, runs), and one that does not compile at all leaves every variant without an answer (their collectives
    count as needed). A variant whose modes a site cannot take, or that fails to run, has none."""
    built, compiled, ran = [], [], []

    def build(bytecode, wanted, donor):
        built.append((donor, {site: sorted(modes) for site, modes in wanted.items()}))
        return program_probe.Probe(bytecode, tuple(wanted), {0: frozenset({0, 1}), 1: frozenset({0, 1, 2})}, donor)

    def compile_probe(probe):
        compiled.append(probe.donor)
        if probe.donor or probe.bytecode == b"broken":
            raise RuntimeError("does not compile")

        return lambda chosen: [None if modes[1] == 2 else [list(modes)] for modes in ran.extend(chosen) or chosen]

    monkeypatch.setattr(program_probe, "build", build)
    # no other set to take results from: a transplant without a stand-in is not run, and nothing is built
    assert program_ablation.Runs(b"program", False, compile_probe).answers({"moved": {0: 3}}) == {}
    assert built == compiled == []
    runs = program_ablation.Runs(b"program", True, compile_probe)
    assert runs.answers({}) == {} and compiled == []
    plans = {"moved": {0: 3}, "zeros": {0: 1}, "scaled": {0: 2}, "fails": {1: 2}, "unwritten": {7: 1}}
    assert runs.answers(plans, {"moved": ("scaled instead", {1: 1})}) == {
        "scaled instead": [[0, 1, 0]], "zeros": [[1, 0, 0]], "unwritten": [[0, 0, 0]]}
    asked = {0: [1, 2, 3], 1: [2], 7: [1]}
    assert built == [(True, asked), (False, asked), (False, {**asked, 1: [1, 2]})]
    assert compiled == [True, False, False]
    # two variants of the same modes (a ring step's and a collective's zeros) run once
    ran.clear()
    assert runs.answers({"zeros": {1: 1}, "again": {0: 1}, "step": {0: 1}}) == {
        "zeros": [[0, 1, 0]], "again": [[1, 0, 0]], "step": [[1, 0, 0]]}
    assert compiled == [True, False, False] and len(ran) == 2
    runs.answers({"zeros": {5: 1}})
    assert compiled == [True, False, False, False] and built[-1] == (False, {**asked, 1: [1, 2], 5: [1]})
    assert program_ablation.Runs(b"broken", False, compile_probe).answers({"zeros": {0: 1}}) == {}


# Which outputs of a program are zeros whatever its inputs (program_ablation.zero_outputs), one per result of
# main: what a variant's answer is known to be without running it.
ZEROS = """
import json, sys
sys.path[:0] = [{root!r}]
from jax._src.interpreters import mlir
from jaxlib.mlir import ir
from grader.sandbox.program_ablation import zero_outputs
from grader.sandbox.program_check import context

TEXT = '''
func.func public @main(%x: tensor<4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
    tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
    tensor<4xf32>, tensor<4xf32>) {{
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %four = stablehlo.constant dense<4.0> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %b4 = stablehlo.broadcast_in_dim %four, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %b0 = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %binf = stablehlo.broadcast_in_dim %inf, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %plus_input = stablehlo.add %z, %x : tensor<4xf32>
  %sum_of_zeros = stablehlo.add %z, %z : tensor<4xf32>
  %mean = stablehlo.divide %z, %b4 : tensor<4xf32>
  %by_zero = stablehlo.divide %z, %b0 : tensor<4xf32>
  %times_inf = stablehlo.multiply %z, %binf : tensor<4xf32>
  %ints = stablehlo.convert %mean : (tensor<4xf32>) -> tensor<4xi32>
  %half = stablehlo.slice %ints [0:2] : (tensor<4xi32>) -> tensor<2xi32>
  %halff = stablehlo.convert %half : (tensor<2xi32>) -> tensor<2xf32>
  %times_input = stablehlo.multiply %x, %z : tensor<4xf32>
  %called = call @negated(%z) : (tensor<4xf32>) -> tensor<4xf32>
  %passed = call @negated_argument(%z) : (tensor<4xf32>) -> tensor<4xf32>
  %looped:2 = stablehlo.while(%i = %n, %v = %z) : tensor<i32>, tensor<4xf32>
   cond {{
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %go = stablehlo.compare GT, %i, %c0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %go : tensor<i1>
  }} do {{
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.subtract %i, %c1 : tensor<i32>
    %w = stablehlo.add %v, %one : tensor<4xf32>
    stablehlo.return %j, %w : tensor<i32>, tensor<4xf32>
  }}
  %ones = stablehlo.multiply %one, %b4 : tensor<4xf32>
  return %plus_input, %sum_of_zeros, %mean, %by_zero, %times_inf, %ints, %halff, %times_input, %called, %passed,
    %looped#1, %ones : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>,
    tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}}
func.func private @negated(%a: tensor<4xf32>) -> tensor<4xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %r = stablehlo.negate %z : tensor<4xf32>
  return %r : tensor<4xf32>
}}
func.func private @negated_argument(%a: tensor<4xf32>) -> tensor<4xf32> {{
  %r = stablehlo.negate %a : tensor<4xf32>
  return %r : tensor<4xf32>
}}
'''
with context():
    print(json.dumps(zero_outputs(mlir.module_to_bytecode(ir.Module.parse(TEXT)))))
"""


def test_an_output_is_known_to_be_zeros_only_through_operations_that_keep_zeros_zeros():
    found = dict(zip(["plus input", "sum of zeros", "divided by 4", "divided by 0", "times infinity", "converted",
                      "sliced", "times an input", "returned by a function", "an argument returned", "through a loop",
                      "no zeros"], _printed(ZEROS)))
    assert found == {"plus input": False, "sum of zeros": True, "divided by 4": True, "divided by 0": False,
                     "times infinity": False, "converted": True, "sliced": True, "times an input": False,
                     "returned by a function": True, "an argument returned": False, "through a loop": False,
                     "no zeros": False}


# What the measurement runs: a collective whose result is the answer is known to be needed from the answer
# alone (nothing compiled or run); an idle one, and one whose answer is zeros anyway, are run.
COMPILES = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
import numpy as np
from jax import lax
sys.path[:0] = [{root!r}]
from grader.sandbox import program_ablation
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.protocol import ArraySpec
from grader.suite import hlo

ran, built = [], []
measured, probe = program_ablation.Runs.answers, program_ablation.program_probe.build
program_ablation.Runs.answers = lambda runs, plans, instead=None: ran.extend(plans) or measured(runs, plans, instead)
program_ablation.program_probe.build = lambda *a: built.append(1) or probe(*a)
n = jax.device_count()
split = lambda v: v.reshape(n, -1)
per_device = lambda body: lambda x, y: jax.pmap(body, axis_name="i")(split(x), split(y))[0]
PROGRAMS = {{
    "psum returned": per_device(lambda a, b: lax.psum(jnp.dot(a, b), "i")),
    "pmean returned": per_device(lambda a, b: lax.pmean(jnp.dot(a, b), "i")),
    "pmap returned": lambda x, y: jax.pmap(lambda a, b: a * b + 1)(split(x), split(y)),
    "psum multiplied away": lambda x, y: jnp.dot(x, y) + per_device(
        lambda a, b: lax.psum(jnp.dot(a, b), "i") * 0)(x, y),
    "psum of zeros returned": per_device(lambda a, b: lax.psum(jnp.dot(a - a, b), "i")),
}}
x, y, fx, fy = np.random.default_rng(0).normal(size=(4, 44)).astype(np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, y))
found = {{}}
for name, fn in PROGRAMS.items():
    ran.clear(), built.clear()
    out = run_program(export_program(fn, specs, name), [(x, y), (fx, fy)], name)
    found[name] = {{"idle": [c.idle for c in hlo.collectives(out["hlo"]) if c.by_student], "manual": out["manual"],
                    "run": len(ran), "built": len(built)}}
print(json.dumps(found))
"""


def test_a_collective_whose_result_is_the_answer_is_needed_without_running_a_variant():
    found = _printed(COMPILES)
    assert found["psum returned"] == {"idle": [False], "manual": True, "run": 0, "built": 0}
    assert found["pmean returned"] == {"idle": [False], "manual": True, "run": 0, "built": 0}
    # zeros and the other set's run are known to change it; only its result replaced by each of its two operands
    # of the same type (is it one passed on?) is run, by one probe
    assert found["pmap returned"] == {"idle": [], "manual": True, "run": 2, "built": 1}
    # an idle psum inside the pmap: its variants, then (no needed collective tells) the pmap's, by a second probe
    for name in ("psum multiplied away", "psum of zeros returned"):
        assert found[name]["idle"] == [True] and found[name]["run"] >= 1 and found[name]["built"] == 2, found[name]


# The probe (grader.sandbox.program_probe): with every mode KEEP it is the program; lane A reads lane B's result of
# the transplanted collective wherever the collective sits: at the top of a pmap, in a loop (both lanes' carries in
# lock step, even when their trip counts differ), in a branch (every branch run, each lane's picked). Each program's
# collectives are replaced one at a time, and the answer printed beside the program's own on A and on B.
LANES = """
import dataclasses, json, sys
import jax
jax.config.update("jax_num_cpu_devices", 2)
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec
sys.path[:0] = [{root!r}]
from grader.sandbox.program_check import parse
from grader.sandbox.program_labels import relabel
from grader.sandbox import program_probe

one = lambda v: lax.psum(jnp.where(v[0] > -jnp.inf, 0.5, 0.0), "i")
pmapped = lambda body: lambda x: jax.pmap(body, axis_name="i")(x.reshape(2, -1))[0]
PROGRAMS = {{
    "psum of data": pmapped(lambda v: lax.psum(jnp.sum(v), "i")),
    "psum of a constant": lambda x: jnp.sum(x) * pmapped(one)(x),
    "in a loop": pmapped(lambda v: lax.fori_loop(0, 3, lambda i, c: c + lax.psum(v[0] * i, "i"), 0.0)),
    "in a loop as long as the data says": lambda x: jax.pmap(lambda v, trips: lax.while_loop(
        lambda c: c[0] < trips, lambda c: (c[0] + 1, c[1] + lax.psum(v[1], "i")), (0.0, 0.0))[1], axis_name="i",
        in_axes=(0, None))(x.reshape(2, -1), jnp.abs(x[0]) * 3)[0],
    "in a branch": lambda x: jax.pmap(lambda v, up: lax.cond(up, lambda: lax.psum(v[1], "i"),
                                                             lambda: -lax.psum(v[2], "i")),
                                      axis_name="i", in_axes=(0, None))(x.reshape(2, -1), x[0] > 0)[0],
}}
mesh = Mesh(np.array(jax.devices()), ("d",))
whole = NamedSharding(mesh, PartitionSpec())
a = np.array([0.9, 1.0, 2.0, 3.0, -0.4, 5.0, 6.0, 7.0], np.float32)
b = np.array([-2.5, 10.0, 20.0, 30.0, 0.7, 50.0, 60.0, 70.0], np.float32)
found = {{}}
for name, fn in PROGRAMS.items():
    exported = jax.export.export(jax.jit(fn))(a)
    labelled, count = relabel(parse(exported.mlir_module()))
    program = dataclasses.replace(exported, mlir_module_serialized=labelled)
    modes = {{program_probe.ZEROS, program_probe.SCALED, program_probe.OTHER}}
    probe = program_probe.build(labelled, dict.fromkeys(range(count), modes), True)
    call = jax.jit(program_probe.exported(program, probe).call, in_shardings=(whole, whole, whole),
                   out_shardings=whole)

    def run(i, mode):
        modes = np.zeros(count, np.int32)
        modes[i] = mode
        return float(call(a, b, modes))

    found[name] = {{"own": float(jax.jit(program.call, in_shardings=whole, out_shardings=whole)(a)),
                    "kept": run(0, program_probe.KEEP), "other": float(jax.jit(fn)(b)),
                    "transplanted": [run(i, program_probe.OTHER) for i in range(count)],
                    "zeroed": [run(i, program_probe.ZEROS) for i in range(count)],
                    "scaled": [run(i, program_probe.SCALED) for i in range(count)]}}
print(json.dumps(found))
"""


def test_a_transplanted_collective_brings_the_other_inputs_result_wherever_it_runs():
    found = _printed(LANES)
    assert all(f["kept"] == f["own"] for f in found.values()), found
    # the one psum of a scalar: zeros, or scaled by -(1 + 1 / 2)
    assert found["psum of data"]["zeroed"] == [0.0]
    assert found["psum of data"]["scaled"] == [-1.5 * found["psum of data"]["own"]]
    assert found["psum of data"]["transplanted"] == [found["psum of data"]["other"]]
    assert found["psum of a constant"]["transplanted"] == [found["psum of a constant"]["own"]]
    assert found["in a loop"]["transplanted"] == [found["in a loop"]["other"]] != [found["in a loop"]["own"]]
    # A runs 3 steps (|0.9| * 3), B 8 (|-2.5| * 3): A's 3 steps each add B's psum (10 + 50)
    loop = found["in a loop as long as the data says"]
    assert (loop["own"], loop["other"], loop["transplanted"]) == (3 * 6.0, 8 * 60.0, [3 * 60.0])
    # two psums, one per branch: A takes its true branch, B its false one; each lane picks its own branch's result
    branch = found["in a branch"]
    assert branch["own"] == 1.0 + 5.0 and branch["other"] == -(20.0 + 60.0)
    assert sorted(branch["transplanted"]) == [branch["own"], 10.0 + 50.0]


WITHIN = """
import json, sys
import jax
jax.config.update("jax_num_cpu_devices", 4)
import jax.numpy as jnp
from jax import lax
sys.path[:0] = [{root!r}]
from grader.sandbox import program_sites
from grader.sandbox.program_check import context, parse
from grader.sandbox.program_labels import relabel


def ring(x):
    def per_device(block):
        step = lambda _, carry: (carry[0] + lax.ppermute(carry[1], "i", [(k, (k + 1) % 4) for k in range(4)]),
                                 lax.ppermute(carry[1], "i", [(k, (k + 1) % 4) for k in range(4)]))
        return lax.fori_loop(0, 3, step, (block, block))[0]
    return jax.pmap(per_device, axis_name="i")(x)


with context():
    module = parse(jax.export.export(jax.jit(ring))(jax.ShapeDtypeStruct((4, 6), jnp.float32)).mlir_module())
    labelled, count = relabel(module)
print(json.dumps({{"collectives": count, "inside": sorted(program_sites.read(module).inside)}}))
"""


def test_collectives_in_a_loop_body_a_per_device_computation_calls_are_inside_it():
    """A lax.fori_loop's body is a function the pmap calls: its ppermutes are the per-device computation's, so
    once one is needed the computation's own variants are not compiled (one compile, not two, for a ring)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(WITHIN.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["collectives"] >= 1 and len(found["inside"]) == found["collectives"], found
