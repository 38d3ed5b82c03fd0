"""GPU and TPU compiled HLO read as the CPU's (grader.suite.hlo_platforms), on public HLO texts.

The fixtures under tests/grader/suite/data/hlo_accelerators/ name their source in their header: XLA's
own test texts, reformatted only where their short form lacks the computation signatures JAX
prints, and a few hand-assembled variants for cases no public text has (a replicated matmul under
SPMD). Every CPU fixture of test_hlo.py is also rewritten here into its asynchronous GPU form and must
read exactly as it does on the CPU.
"""

import re
from pathlib import Path

import pytest

from grader.suite import hlo, hlo_platforms

DATA = Path(__file__).parent / "data"


def accelerator(name: str) -> str:
    return (DATA / "hlo_accelerators" / f"{name}.txt").read_text()


def opcodes(text: str) -> list[str]:
    comps, entry = hlo.parse_computations(text)
    return [ins.opcode for ins in hlo_platforms.normalise(comps)[entry]]


def test_every_fixture_names_its_source():
    for path in (DATA / "hlo_accelerators").glob("*.txt"):
        header = path.read_text().split("HloModule", 1)[0]
        assert "source: openxla/xla, xla/" in header or "Hand-assembled" in header, path.name


# --- library calls: cuBLAS, cuDNN ---------------------------------------------------------------

def test_a_cublas_gemm_is_the_dot_it_replaced_and_its_workspace_is_not_work():
    text = accelerator("gpu_gemm_workspace")
    assert "s8[1028]" in text and opcodes(text)[2] == "dot"
    # its multiply-adds (16 x 32 by 32 x 16) and the exponential of its result (its negation flips signs: no
    # arithmetic), never the workspace
    assert hlo.operations(text) == 2 * 16 * 16 * 32 + 16 * 16


def test_a_replicated_matmul_in_gpu_hlo_does_the_whole_products_work():
    replicated, split = accelerator("gpu_matmul_replicated"), accelerator("gpu_matmul_split")
    share = 2 * 32 * 32 * 32  # x is 32 x 64 over 2 GPUs: each multiplies its 32 x 32 block of x by 32 rows of w
    added = 32 * 32 // 2  # each GPU's half of the psum's adds of two 32 x 32 products
    assert hlo.operations(split) == share + added
    assert hlo.operations(replicated) == 2 * share + 32 * 32 + added  # the whole x, and an add: no "share" point
    for text in (replicated, split):          # both psum their products: only the work tells them apart
        assert hlo.count(text, "all-reduce", by_student=True) == 1
        assert hlo.bytes_moved(text, by_student=True) == 32 * 32 * 4


def test_the_schedulers_gemm_module_counts_its_gemms_and_each_all_reduce_once():
    text = accelerator("gpu_gemm_async_all_reduce")
    assert opcodes(text).count("dot") == 7 and "custom-call" not in opcodes(text)
    reduces = hlo.collectives(text)
    assert [(c.op, c.times, c.bytes, c.shape) for c in reduces] == [("all-reduce", 1, 32 * 4, "f32[32]")] * 2
    assert hlo.count(text, "all-reduce") == 2
    assert hlo.operations(text) == 7 * 2 * 32 * 32 * 32 + 6 * 32 * 32  # seven 32 x 32 matmuls, six adds


def test_a_cudnn_convolution_is_work():
    text = accelerator("gpu_cudnn_convolution")
    assert opcodes(text)[2] == "convolution"
    assert hlo.operations(text) == 2 * 32 * 32 * 8 * 3 * 3  # each of the 32 x 32 x 8 results: a 3 x 3 window


@pytest.mark.parametrize("target, opcode", [
    ("__cublas$gemm", "dot"), ("__cublas$lt$matmul", "dot"), ("__cublas$lt$matmul$f8", "dot"),
    ("__cublas$triangularSolve", "library-call"), ("__cudnn$convBackwardFilter", "convolution"),
    ("__cudnn$convBiasActivationForward", "convolution"), ("__cudnn$fmhaSoftmax", "library-call"),
    ("__cusolver$potrf", "library-call"),
    ("Sharding", None), ("SPMDFullToShardShape", None), ("__gpu$xla.gpu.triton", None), ("tpu_custom_call", None),
    ("__cublas", None), ("x__cudnn$conv", None)])
def test_only_the_gpu_libraries_calls_are_read_as_arithmetic(target, opcode):
    assert hlo_platforms.library_opcode(target) == opcode


def test_a_library_call_run_asynchronously_is_still_the_library_call():
    text = accelerator("gpu_gemm_workspace")
    call = re.search(r"\n  (custom-call\.3 = .*?) custom-call\((p1_32, p2_32)\)(.*)\n", text)
    shape = call.group(1).split(" = ", 1)[1]
    async_call = (f"\n  start = ((f32[16,32], f32[32,16]), {shape}, s32[]) "
                  f"custom-call-start({call.group(2)}){call.group(3)}\n  custom-call.3 = {shape} custom-call-done(start)\n")
    text = text.replace(call.group(0), async_call)
    assert "custom-call-start(" in text and opcodes(text)[2:4] == ["dot", "bitcast"]
    assert hlo.operations(text) == 2 * 16 * 16 * 32 + 16 * 16


def test_a_kernel_of_the_students_own_is_not_counted_as_work():
    text = accelerator("gpu_gemm_workspace").replace("__cublas$gemm", "__gpu$xla.gpu.triton")
    assert hlo.operations(text) == 16 * 16  # only the exponential of its result: a Pallas kernel's work is unknown


@pytest.mark.parametrize("shape, kept", [
    ("(f32[16,16], s8[1028]{0})", "f32[16,16]"),
    ("(f32[1,32,32,8]{3,2,1,0}, u8[0]{0})", "f32[1,32,32,8]{3,2,1,0}"),
    ("(f32[4]{0}, f32[4]{0}, u8[16]{0})", "(f32[4]{0}, f32[4]{0})"),
    ("(f32[4]{0}, f32[4]{0})", "(f32[4]{0}, f32[4]{0})"),   # no scratch buffer: unchanged
    ("(s8[4]{0})", "(s8[4]{0})"),                             # nothing but it: unchanged
    ("f32[4]{0}", "f32[4]{0}")])
def test_a_library_calls_scratch_buffer_is_dropped_from_its_result(shape, kept):
    assert hlo_platforms.without_scratch(shape) == kept


# --- asynchronous collectives -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["async_reduce_scatter_sugar", "async_reduce_scatter_wrapped"])
def test_an_asynchronous_reduce_scatter_is_one_reduce_scatter_in_either_printed_form(name):
    text = accelerator(name)
    (scatter,) = hlo.collectives(text)
    assert (scatter.op, scatter.times, scatter.operands, scatter.bytes) == ("reduce-scatter", 1, 1, 20 * 4)
    assert scatter.shape == "f32[10]{0}" and not scatter.idle
    assert hlo.count(text, "reduce-scatter") == 1 and hlo.operations(text) == 0


@pytest.mark.parametrize("op", hlo.COLLECTIVES)
def test_every_collective_written_asynchronously_counts_once_with_its_operands_bytes(op):
    text = accelerator("async_reduce_scatter_sugar").replace("reduce-scatter", op)
    assert f"{op}-start(" in text and f"{op}-done(" in text
    (found,) = hlo.collectives(text)
    assert (found.op, found.times, found.bytes, found.shape) == (op, 1, 20 * 4, "f32[10]{0}")


def test_an_async_done_that_still_names_the_computation_does_not_run_it_twice():
    text = accelerator("async_reduce_scatter_wrapped").replace(
        "async-done(((f32[20]{0}), f32[10]{0}) %reduce-scatter-update)",
        "async-done(((f32[20]{0}), f32[10]{0}) %reduce-scatter-update), calls=%AsyncOp")  # older XLA's form
    assert "calls=%AsyncOp\n}" in text
    assert [c.times for c in hlo.collectives(text)] == [1]


def test_a_computation_that_ends_with_its_execution_thread_ends_there():
    comps, entry = hlo.parse_computations(accelerator("async_reduce_scatter_wrapped"))
    assert entry == "Entry" and [i.name for i in comps["add"]] == ["p0", "p1", "add"]
    assert [i.name for i in comps["AsyncOp"]] == ["pasync", "reduce-scatter"]


def test_tpu_all_gathers_count_once_with_the_bytes_a_device_sends_and_the_gathered_shape():
    text = accelerator("tpu_all_gather_async_convolution")
    gathers = hlo.collectives(text)
    assert [(c.op, c.times, c.bytes, c.shape) for c in gathers] == [
        ("all-gather", 1, 8 * 256 * 256 * 4, "f32[16,256,256]")] * 2
    assert all(c.groups == ((0, 1),) for c in gathers)
    assert all(c.idle for c in gathers)  # they gather a broadcast of the device's id: nothing of the inputs
    assert hlo.count(text, "all-gather") == 0
    # the convolution of the parameters (each result: 16 x 64 kernel numbers) and the add; the convolution of the
    # gathered ids, and the add that made them, compute on no input: the same whatever the inputs, no work
    assert hlo.operations(text) == 2 * 16 * 256 * 256 * 16 * 64 + 16 * 256 * 256


def test_a_tpu_convolution_fusion_is_the_matmuls_work():
    text = accelerator("tpu_convolution_fusion")
    # the whole x by w on every device (a replicated matmul), and its half of the psum's adds over 2 chips
    assert hlo.operations(text) == 2 * 128 * 128 * 256 + 128 * 128 // 2
    (reduce,) = hlo.select(text, "all-reduce", by_student=True)
    assert (reduce.times, reduce.bytes) == (1, 128 * 128 * 4)


def test_late_bound_operands_of_an_update_are_the_starts():
    text = """HloModule m
%exp (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} exponential(%x)
}, execution_thread="sparsecore"
ENTRY %main (input: f32[4]) -> f32[4] {
  %input = f32[4]{0} parameter(0)
  %start = ((), (), s32[]) call-start(), async_execution_thread="sparsecore", to_apply=%exp
  %update = ((f32[4]), f32[4]) call-update(%start, %input)
  ROOT %done = f32[4]{0} call-done(%update)
}
"""
    comps, entry = hlo.parse_computations(text)
    start = hlo_platforms.normalise(comps)[entry][1]
    assert (start.opcode, start.operands, start.shape) == ("call", ["input"], "f32[4]{0}")
    assert hlo.operations(text) == 4  # the exponential, run once, on the input bound by the update


def test_a_collectives_operands_bound_late_by_an_update_count_in_its_bytes():
    text = """HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (p: f32[4], q: f32[6]) -> (f32[4], f32[6]) {
  %p = f32[4]{0} parameter(0)
  %q = f32[6]{0} parameter(1)
  %start = ((f32[4]), (f32[4], f32[6])) all-reduce-start(%p), replica_groups={{0,1}}, to_apply=%sum
  %update = ((f32[4], f32[6]), (f32[4], f32[6])) all-reduce-update(%start, %q)
  ROOT %done = (f32[4]{0}, f32[6]{0}) all-reduce-done(%update)
}
"""
    (reduce,) = hlo.collectives(text)
    assert (reduce.op, reduce.operands, reduce.bytes) == ("all-reduce", 2, (4 + 6) * 4)


# --- every CPU rule holds on the GPU's asynchronous form ----------------------------------------

_COLLECTIVE_LINE = re.compile(r"^(\s*)(ROOT\s+)?%?([\w.\-]+) = (.*?) "
                              r"(all-reduce|all-gather|collective-permute|reduce-scatter|all-to-all)\((.*)$")


def async_form(text: str) -> str:
    """The module with every collective written as XLA's GPU compiler writes it: a -start that holds the
    operands and attributes, typed as XLA types each start, and a -done with the result."""
    comps, _ = hlo.parse_computations(text)
    shapes = {ins.name: ins.shape for instrs in comps.values() for ins in instrs}
    operands = {ins.name: ins.operands for instrs in comps.values() for ins in instrs}
    lines = []
    for line in text.splitlines():
        m = _COLLECTIVE_LINE.match(line)
        if not m:
            lines.append(line)
            continue
        indent, root, name, result, op, rest = m.groups()
        sent = ", ".join(shapes[o] for o in operands[name])
        start_type = {"all-reduce": result, "all-gather": f"({sent}, {result})",
                      "collective-permute": f"({sent}, {result}, u32[], u32[])",
                      "reduce-scatter": f"(({sent}), {result})", "all-to-all": f"(({sent}), {result})"}[op]
        lines.append(f"{indent}%{name}.start = {start_type} {op}-start({rest}")
        lines.append(f"{indent}{root or ''}%{name} = {result} {op}-done(%{name}.start)")
    return "\n".join(lines) + "\n"


CPU_FIXTURES = sorted(p.stem for p in (DATA / "hlo").glob("*.txt"))


@pytest.mark.parametrize("name", CPU_FIXTURES)
def test_the_gpu_form_of_every_cpu_program_reads_as_the_cpu_one(name):
    cpu = (DATA / "hlo" / f"{name}.txt").read_text()
    gpu = async_form(cpu)
    assert gpu.count("-start(") == len(hlo.collectives(cpu))
    assert hlo.collectives(gpu) == hlo.collectives(cpu)
    assert hlo.operations(gpu) == hlo.operations(cpu)
    for by_student in (False, True):
        assert hlo.count(gpu, hlo.COLLECTIVES, by_student) == hlo.count(cpu, hlo.COLLECTIVES, by_student)
        assert hlo.bytes_moved(gpu, by_student=by_student) == hlo.bytes_moved(cpu, by_student=by_student)


def test_the_async_form_covers_every_kind_of_collective_the_cpu_fixtures_have():
    kinds = {c.op for name in CPU_FIXTURES for c in hlo.collectives((DATA / "hlo" / f"{name}.txt").read_text())}
    assert kinds == {"all-reduce", "all-gather", "collective-permute", "reduce-scatter", "all-to-all"}


def test_a_cpu_module_is_left_as_it_is():
    for name in CPU_FIXTURES:
        comps, _ = hlo.parse_computations((DATA / "hlo" / f"{name}.txt").read_text())
        assert hlo_platforms.normalise(comps) == comps, name
