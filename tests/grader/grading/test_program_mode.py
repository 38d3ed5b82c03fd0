"""Program mode: the structure and the values graded are those of one program, compiled and run by a
clean worker, so what a submission does inside its own process cannot change either; and the
grader's half of it: what the student's process is told, the inputs it is never told, the values
checked on both.

One generated course holds one task per submission, each graded by exercise 7's own dot suite
(test_dot.py with the module name changed): four value tests through ``student.call`` and the
structural test through ``student.program``. Every submission below is hostile or wrong in one way;
``unchanged`` is the reference solution, graded after all of them by the same clean workers.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from conftest import ROOT, run_grade
from grader.errors import GraderError
from grader.grading import program_mode
from grader.protocol import ArraySpec
from grader.suite import WrongProgram

SOLUTION = (ROOT / "solutions" / "exercise7" / "dot.py").read_text()
SUITE = (ROOT / "tests" / "exercise7" / "test_dot.py").read_text()
STRUCTURAL = "test_dot_uses_one_all_reduce"
POINTS, WEIGHT = 6, 2  # each task's points, and the structural test's weight (each value test weighs 1)

SUBMISSIONS = {
    # Attack 1: a single-device dot, with every way JAX prints a program patched to print a one-psum one.
    "patched_text": '''
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax import lax

        def _honest(x, y):
            return jax.pmap(lambda a, b: lax.psum(jnp.dot(a, b), "i"), axis_name="i")(
                x.reshape(jax.device_count(), -1), y.reshape(jax.device_count(), -1))[0]

        _ones = np.ones(2 * jax.device_count(), np.float32)
        _lowered = jax.jit(_honest).lower(_ones, _ones)
        CANNED_HLO, CANNED_MLIR = _lowered.compile().as_text(), _lowered.as_text()
        jax.stages.Compiled.as_text = lambda self, *a, **k: CANNED_HLO
        jax.stages.Lowered.as_text = lambda self, *a, **k: CANNED_MLIR
        _compile = jax.stages.Lowered.compile
        jax.stages.Lowered.compile = lambda self, *a, **k: _compile(_lowered, *a, **k)
        jax.export.Exported.mlir_module = lambda self: CANNED_MLIR

        def distributed_dot(x, y):
            return jnp.dot(x, y)
        ''',
    # Attack 2: NumPy on concrete arrays, a token psum (of zeros) only when traced.
    "traced_token": '''
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax import lax

        def distributed_dot(x, y):
            if isinstance(x, jax.core.Tracer):
                token = jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
                return token(jnp.zeros(jax.device_count(), x.dtype))[0]
            return np.dot(np.asarray(x), np.asarray(y))
        ''',
    "plain_dot": '''
        import jax.numpy as jnp

        def distributed_dot(x, y):
            return jnp.dot(x, y)
        ''',
    "pure_callback": '''
        import jax
        import jax.numpy as jnp
        import numpy as np

        def distributed_dot(x, y):
            result = jax.ShapeDtypeStruct((), x.dtype)
            return jax.pure_callback(lambda a, b: np.dot(a, b).astype(a.dtype), result, x, y)
        ''',
    "io_callback": '''
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.experimental import io_callback

        def distributed_dot(x, y):
            result = jax.ShapeDtypeStruct((), x.dtype)
            return io_callback(lambda a, b: np.dot(a, b).astype(a.dtype), result, x, y)
        ''',
    "debug_callback": SOLUTION + '''
_dot = distributed_dot


def distributed_dot(x, y):
    jax.debug.callback(lambda v: None, x)
    return _dot(x, y)
''',
    # The export check switched off, so a callback reaches the clean worker. The modules of this
    # course share one worker, so the patches of jax.export here undo themselves after one use.
    "forged_callback": '''
        import jax
        import jax._src.export._export as _export
        import jax.numpy as jnp
        import numpy as np

        _real_check, _real_export = _export._check_lowering, jax.export.export
        _anything = [jax.export.DisabledSafetyCheck.custom_call("xla_ffi_python_cpu_callback")]

        def _forge(fn, **kwargs):
            jax.export.export = _real_export

            def export_with_callbacks(*args):
                _export._check_lowering = lambda lowering: None
                try:
                    return _real_export(fn, disabled_checks=_anything)(*args)
                finally:
                    _export._check_lowering = _real_check
            return export_with_callbacks

        jax.export.export = _forge

        def distributed_dot(x, y):
            result = jax.ShapeDtypeStruct((), x.dtype)
            return jax.pure_callback(lambda a, b: np.dot(a, b).astype(a.dtype), result, x, y)
        ''',
    # A program for other inputs than the test's: the clean worker refuses it, and must recover.
    "bad_blob": SOLUTION + '''
_real_export = jax.export.export


def _for_three_numbers(fn, **kwargs):
    jax.export.export = _real_export
    return lambda *args: _real_export(fn, **kwargs)(*[jax.ShapeDtypeStruct((3,), a.dtype) for a in args])


jax.export.export = _for_three_numbers
''',
    "python_if": SOLUTION + '''
_dot = distributed_dot


def distributed_dot(x, y):
    if x[0] > 100:
        return 0.0
    return _dot(x, y)
''',
    "unchanged": SOLUTION,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("program")
    tasks = "\n".join(f"      - {{id: {m}, title: {m}, points: {POINTS}, hint: 'one psum', "
                      f"tests: {{{STRUCTURAL}: {{weight: {WEIGHT}}}}}}}" for m in SUBMISSIONS)
    (root / "course.yaml").write_text(textwrap.dedent("""\
        course: program-mode
        defaults: {devices: [2], timeout_s: 30}
        exercises:
          ex:
            title: Program mode against hostile submissions
            tasks:
        """) + tasks + "\n")
    for folder in ("exercises/ex", "solutions/ex", "tests/ex"):
        (root / folder).mkdir(parents=True)
    for module, source in SUBMISSIONS.items():
        (root / "exercises/ex" / f"{module}.py").write_text(textwrap.dedent(source))
        (root / "solutions/ex" / f"{module}.py").write_text(SOLUTION)  # what each program's work is compared with
        (root / "tests/ex" / f"test_{module}.py").write_text(SUITE.replace('"dot.distributed_dot"',
                                                                             f'"{module}.distributed_dot"'))
    proc = run_grade("ex", "--course", str(root), "--format", "json", "--seed", "5", timeout=600)
    assert proc.returncode == 0, proc.stderr
    return {t["id"]: t for t in json.loads(proc.stdout)["tasks"]}


def _structural(task) -> dict:
    return next(c for c in task["cases"] if c["test"] == STRUCTURAL)


def _value_cases(task) -> list[dict]:
    return [c for c in task["cases"] if c["test"] != STRUCTURAL]


@pytest.mark.parametrize("module, words", [
    ("patched_text", "its program has no jax.pmap that its answer depends on"),
    ("plain_dot", "its program has no jax.pmap that its answer depends on"),
    ("traced_token", "its program has no jax.pmap that its answer depends on"),  # a pmap of zeros, told first
    ("pure_callback", "calls back into Python on the host"),
    ("io_callback", "calls back into Python on the host"),
])
def test_a_single_device_dot_keeps_the_value_points_and_loses_the_structural_ones(graded, module, words):
    task = graded[module]
    assert all(c["outcome"] == "passed" for c in _value_cases(task)), task["cases"]
    assert _structural(task)["outcome"] == "failed"
    assert words in _structural(task)["message"], _structural(task)["message"]
    values = len(_value_cases(task))
    assert task["score"] == pytest.approx(POINTS * values / (values + WEIGHT), abs=1e-4), task


@pytest.mark.parametrize("module, kind, words", [
    ("pure_callback", "not_exportable", "jax.pure_callback, io_callback, jax.debug.print or jax.debug.callback"),
    ("debug_callback", "not_exportable", "calls back into Python on the host"),
    ("forged_callback", "not_exportable", "distributed_dot's program was refused: it calls back into Python"),
    ("bad_blob", "not_exportable", "it takes float32[3], float32[3], not the test's inputs (float32[405], float32[405])"),
    ("python_if", "not_traceable", "cannot be compiled with jax.jit, which knows only the shapes and dtypes of the "
                                   "inputs, not their values, and distributed_dot needs a value: an if"),
])
def test_a_program_that_cannot_be_graded_gets_a_verdict_naming_why(graded, module, kind, words):
    case = _structural(graded[module])
    assert case["kind"] == kind, case
    assert words in case["message"], case["message"]


def test_the_reference_keeps_full_marks_after_the_clean_workers_met_all_of_them(graded):
    assert graded["unchanged"]["score"] == POINTS, graded["unchanged"]["cases"]


def test_the_students_process_is_told_shapes_and_dtypes_and_a_python_number_is_refused():
    x = np.zeros((2, 3), np.float32)
    assert program_mode.specs((x, {"y": np.int8(1)})) == (ArraySpec((2, 3), "float32"), {"y": ArraySpec((), "int8")})
    with pytest.raises(GraderError, match=r"input\[1\] is a float: pass a Python value as a keyword argument"):
        program_mode.specs((x, 0.1))


def test_drawn_inputs_follow_the_tests_floats_integers_within_their_range_and_bools():
    args = (np.zeros(500, np.float32), (np.array([3, 9, 5] * 100, np.int16), np.zeros(500, bool)))
    (drawn,) = program_mode.fresh_inputs(args, None, np.random.default_rng(0), "f")
    floats, (ints, bools) = drawn
    assert floats.dtype == np.float32 and 0.8 < floats.std() < 1.2
    assert ints.dtype == np.int16 and ints.min() == 3 and ints.max() == 9 and len(set(ints)) == 7
    assert bools.dtype == bool and 100 < bools.sum() < 400
    assert program_mode.specs(drawn) == program_mode.specs(args)


def test_a_suites_fresh_inputs_must_have_the_tests_shapes_and_dtypes():
    args = (np.zeros(4, np.float32),)
    (drawn,) = program_mode.fresh_inputs(args, lambda rng: [np.ones(4, np.float32)], np.random.default_rng(0), "f")
    assert np.array_equal(drawn[0], np.ones(4))
    with pytest.raises(GraderError, match="the suite's fresh.rng. for f returned inputs"):
        program_mode.fresh_inputs(args, lambda rng: (np.ones(5, np.float32),), np.random.default_rng(0), "f")


def _wrong(values, inputs, expect) -> str:
    with pytest.raises(WrongProgram) as failure:
        program_mode.check_values("the program", values, inputs, expect, "f", 4, 1e-4, 1e-5)
    assert failure.value.program == "the program"
    return str(failure.value)


def test_a_wrong_value_names_the_call_the_devices_and_which_inputs():
    x, y = np.arange(3.0), np.arange(3.0) + 1
    ok = {"value": (x, np.int32(2))}
    program_mode.check_values("p", [ok, {"value": (y, np.int32(2))}], [(x,), (y,)],
                              lambda v: {"value": (v, np.int32(2))}, "f", 4, 1e-4, 1e-5)
    said = _wrong([x + 1], [(x,)], lambda v: v)
    assert said == "f (compiled with jax.jit, on 4 devices, given the test's inputs) is the answer plus 1 at every entry"
    said = _wrong([x, x], [(x,), (y,)], lambda v: v)
    assert said.startswith("f (compiled with jax.jit, on 4 devices, given a second set of inputs drawn by the grader "
                           "that your code never saw) is the answer minus 1 at every entry")
    noise = _wrong([x + np.array([0.5, 0, -2])], [(x,)], lambda v: v)
    assert noise.startswith("f (compiled with jax.jit, on 4 devices, given the test's inputs) is wrong at 2 of 3 ")
    assert said.endswith("on the test's own inputs it was right to the last digits: a result known in advance for "
                         "them rather than computed from its inputs, or arithmetic that loses precision on some inputs "
                         "(a difference of two large, nearly equal numbers) gives that")
    # round 50: within the tolerance on the test's inputs, not exactly right: nothing says the answer was built in
    long, heavy_last = np.ones(20000), np.concatenate([np.ones(19999), [10.0]])
    dropped = _wrong([long[:-1].sum(), heavy_last[:-1].sum()], [(long,), (heavy_last,)], lambda v: v.sum())
    assert dropped.endswith("on the test's own inputs it was off too, by less than the check's tolerance: the "
                            "mistake shows on these") and "built in" not in dropped, dropped
    assert "f result[1] (compiled" in _wrong([(x, np.int32(3))], [(x,)], lambda v: (v, np.int32(2)))  # exactly
    assert "returned ['a'], expected a dict with keys ['value']" in _wrong([{"a": x}], [(x,)], lambda v: {"value": v})


def test_every_wrong_array_of_a_result_is_told_with_its_place_among_the_programs_results():
    """The first in full, the others by their place; the failure keeps their positions (jax.jit's order: a dict's
    keys sorted), which decide the collectives a difference is looked for among (grader.suite.structure)."""
    x = np.arange(1.0, 4.0)
    with pytest.raises(WrongProgram) as wrong:
        program_mode.check_values("p", [(x, {"b": x, "a": 2 * x}, 4 * x)], [(x,)],
                                  lambda v: (v, {"a": v, "b": v}, v), "f", 4, 1e-4, 1e-5)
    assert str(wrong.value) == ("f result[1]['a'] (compiled with jax.jit, on 4 devices, given the test's inputs) is 2 "
                                "times the answer at every entry; and result[2] is 4 times the answer (4 is the number "
                                "of devices) at every entry")
    assert wrong.value.results == frozenset({1, 3})
    with pytest.raises(WrongProgram) as one:
        program_mode.check_values("p", [(x, x + 1)], [(x,)], lambda v: (v, v), "f", 4, 1e-4, 1e-5)
    assert one.value.results == frozenset({1}) and "; and" not in str(one.value)


def test_a_probe_measures_the_wrong_value_one_block_at_a_time():
    from grader.suite.differences import Probe, Split
    x = np.arange(1.0, 9.0)

    def missing_last_block(v):
        return np.float64(np.sum(v[:6]))
    probe = Probe(reference=lambda v: np.sum(v), inputs=(x,), splits=(Split(0, 0, 4, "x"),),
                  rerun=missing_last_block)
    with pytest.raises(AssertionError, match=r"returned 21, expected 36: it leaves out x's block 3 \(device 3's\)$"):
        program_mode.check_values("p", [missing_last_block(x)], [(x,)], lambda v: np.sum(v), "f", 4, 1e-4, 1e-5,
                                  probe=probe)
