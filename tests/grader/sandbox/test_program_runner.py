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

from grader.sandbox.program_ablation import TOGETHER, answers_of

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
}}
x, y, fx, fy = np.random.default_rng(0).normal(size=(4, 45)).astype(np.float32)
specs = tuple(ArraySpec(a.shape, str(a.dtype)) for a in (x, y))
found = {{}}
for name, fn in PROGRAMS.items():
    out = run_program(export_program(fn, specs, name), [(x, y), (fx, fy)], name)
    found[name] = [[c.op, c.idle] for c in hlo.collectives(out["hlo"]) if c.by_student]
print(json.dumps(found))
"""


def _collectives_measured(devices: int, setup: str = "") -> dict:
    script = textwrap.dedent(ABLATION).format(root=str(ROOT), devices=devices, setup=setup)
    proc = subprocess.run([sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=300, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_collective_counts_only_if_the_answer_changes_without_it():
    found = _collectives_measured(2)
    assert found["honest"] == [["all-reduce", False]]
    for trick in ("of_difference", "multiplied_away", "subtracted_from_itself", "dead_branch", "never_selected",
                  "too_small_to_matter"):
        assert found[trick] and all(idle for _, idle in found[trick]), (trick, found[trick])


def test_on_one_device_where_a_psum_is_the_identity_the_measurement_still_tells():
    found = _collectives_measured(1)
    assert found["honest"] == [["all-reduce", False]]
    for trick in ("of_difference", "multiplied_away", "dead_branch"):
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
}}
x, fresh = np.random.default_rng(0).normal(size=(2, 2, 3)).astype(np.float32)
print(json.dumps({{name: run_program(export_program(fn, (ArraySpec(x.shape, str(x.dtype)),), "f"), [(x,), (fresh,)],
                                    "f")["manual"] for name, fn in PROGRAMS.items()}}))
"""


def test_a_pmap_counts_only_if_the_answer_needs_it():
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(MANUAL.format(root=str(ROOT)))], capture_output=True,
                          text=True, timeout=120, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"pmap": True, "idle pmap beside the work": False,
                                       "pmap of nothing beside the work": False, "no pmap": False}


def test_many_variants_are_compiled_a_few_at_a_time_and_one_that_fails_alone_is_left_out():
    batches = []

    def run_variants(variants, inputs):
        batches.append(len(variants))
        if b"broken" in variants:
            raise RuntimeError("does not compile")
        return [v.decode() for v in variants]

    variants = {k: f"v{k}".encode() for k in range(2 * TOGETHER + 3)}
    assert answers_of(run_variants, variants, ()) == {k: f"v{k}" for k in variants}
    assert batches == [TOGETHER, TOGETHER, 3]
    batches.clear()
    assert answers_of(run_variants, {0: b"v0", 1: b"broken", 2: b"v2"}, ()) == {0: "v0", 2: "v2"}
    assert batches == [3, 1, 1, 1]
