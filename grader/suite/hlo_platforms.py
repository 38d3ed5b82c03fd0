"""What a GPU or TPU compiled module says, rewritten into the forms grader.suite.hlo reads.

hlo's rules were written on the CPU's compiled HLO, where a matmul is a ``dot``, a psum an
``all-reduce`` and every instruction runs where it stands. A module compiled for a GPU or a TPU says
the same things in other words, and read as they stand they are wrong twice over: a library call is
not counted as work (a device that multiplies the whole matrices looks as if it did its share), and
an asynchronous collective is counted by the half that starts it, with the bytes or the shape of
the wrong element of a tuple. :func:`normalise` rewrites them, instruction by instruction, before
hlo counts anything (each rule has a test on public GPU/TPU HLO text in
tests/grader/suite/test_hlo_platforms.py):

* **library calls**: a ``custom-call`` to cuBLAS / cuBLASLt (``__cublas$gemm``,
  ``__cublas$lt$matmul``, ``__cublas$lt$matmul$f8``; ROCm's hipBLAS(Lt) uses the same targets) is the
  ``dot`` it replaced, a cuDNN convolution (``__cudnn$convForward``, ``$convBackwardInput``, ...) the
  ``convolution``, and any other cuBLAS, cuDNN or cuSOLVER call (a triangular solve, fused
  attention, a norm) arithmetic of its own (``library-call``), all with the call's operands. Their
  result is a tuple that ends with a scratch buffer (``s8[4194304]``, ``u8[0]``): that buffer is
  dropped, so the work counted is the product's, never the workspace's size;
* **asynchronous pairs**: ``all-reduce-start`` / ``all-reduce-done`` (and ``all-gather``,
  ``collective-permute``, ``reduce-scatter``, ``all-to-all``, ``copy``, ``fusion`` and every
  other ``X-start`` / ``X-update`` / ``X-done`` chain) is one ``X`` at the start, with the start's
  operands (those bound late by an ``-update`` too) and the done's result type; the update and done
  steps become a ``bitcast`` of the step before, so nothing is counted twice and the data flow is
  unchanged. An ``async-start`` (or TPU's ``call-start``) that runs a computation of its own becomes
  a ``call`` of it, so a collective inside is counted once, where it is;
* **typed operands**: older XLA and TPU dumps print each operand with its type
  (``all-gather-start(f32[8,256]{1,0} %x)``); they are rewritten to the names alone that JAX prints
  today, so their bytes are those of the named operands;
* **Triton fusions** (``kind=kCustom`` with ``__triton_gemm``, ``__triton_nested_gemm_fusion``,
  ``__triton``) and TPU's convolution fusions (``kind=kOutput``) are fusions: hlo already follows
  ``calls=`` into them, and the ``dot`` or ``convolution`` inside is counted there.

What is not read: a hand-written kernel (a Pallas ``__gpu$xla.gpu.triton`` or ``tpu_custom_call``)
does work no text says the size of, and stays a ``custom-call`` that counts none; a
``collective-permute`` decomposed into ``send`` / ``recv`` (XLA does so for pipelined loops on GPU)
is not counted as a collective; an in-place ``collective-permute-start`` (with ``slice_sizes``, which
JAX does not emit) counts its output buffer and offsets among the bytes it sends.
"""

from __future__ import annotations

import dataclasses
import re

ASYNC_SUFFIXES = ("-start", "-update", "-done")
# Opcodes that start an asynchronous computation of their own rather than one named instruction.
_CALLING_STARTS = {"async-start": "call", "call-start": "call"}
_TARGET = re.compile(r'custom_call_target="([^"]*)"')
_SCRATCH = re.compile(r"^[su]8\[\d*\]")


def library_opcode(target: str) -> str | None:
    """The instruction a GPU library call stands for, or None for a call that is not a library's."""
    if target.startswith("__cublas$"):
        return "dot" if ("gemm" in target or "matmul" in target) else "library-call"
    if target.startswith("__cudnn$"):
        return "convolution" if target.startswith("__cudnn$conv") else "library-call"
    if target.startswith("__cusolver$"):
        return "library-call"
    return None


def tuple_elements(shape: str) -> list[str] | None:
    """The element types of a tuple type (``(f32[4]{0}, s8[0]{0})``), or None if it is not a tuple."""
    shape = shape.strip()
    if not shape.startswith("("):
        return None
    depth, items, current = 0, [], ""
    for ch in shape[1:-1] if shape.endswith(")") else shape[1:]:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current.strip())
    return items


def without_scratch(shape: str) -> str:
    """A library call's result type without the scratch buffer that ends it; one array is unwrapped."""
    elements = tuple_elements(shape)
    if not elements or len(elements) < 2 or not _SCRATCH.match(elements[-1]):
        return shape
    kept = elements[:-1]
    return kept[0] if len(kept) == 1 else f"({', '.join(kept)})"


def _step(opcode: str) -> tuple[str, str] | None:
    """("X", "-start" | "-update" | "-done") for a step of an asynchronous chain, else None."""
    for suffix in ASYNC_SUFFIXES:
        if opcode.endswith(suffix) and len(opcode) > len(suffix):
            return opcode[:-len(suffix)], suffix
    return None


def _operand_list_end(rest: str) -> int:
    """Where the operand list that ``rest`` starts with ends (the index of its closing parenthesis)."""
    depth = 1
    for i, ch in enumerate(rest):
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        if depth == 0:
            return i
    return len(rest)


def _untyped_operands(ins):
    """The instruction with its operands written by name only: older XLA and TPU dumps print each with
    its type (``all-gather-start(f32[8,256]{1,0} %x)``), which hlo would read as the operand's name."""
    end = _operand_list_end(ins.rest)
    if not any(" " in text.strip() for text in ins.rest[:end].split(",")):
        return ins
    names = ", ".join(f"%{name}" for name in ins.operands)
    return dataclasses.replace(ins, rest=names + ins.rest[end:])


def _library_calls(instrs: list) -> list:
    out = []
    for ins in instrs:
        target = _TARGET.search(ins.rest) if ins.opcode == "custom-call" else None
        opcode = library_opcode(target.group(1)) if target else None
        out.append(dataclasses.replace(ins, opcode=opcode, shape=without_scratch(ins.shape)) if opcode else ins)
    return out


def _async_chains(instrs: list) -> list:
    """One instruction per asynchronous chain of this computation, at its start (see the module's text)."""
    start_of: dict[str, str] = {}  # every step's name -> the name of the start of its chain
    late: dict[str, list[str]] = {}  # a start -> the operands its -update steps bind
    done_of: dict[str, object] = {}
    for ins in instrs:
        step = _step(ins.opcode)
        if step and step[1] == "-start":
            start_of[ins.name] = ins.name
        elif step and ins.operands and ins.operands[0] in start_of:
            start = start_of[ins.operands[0]]
            start_of[ins.name] = start
            late.setdefault(start, []).extend(ins.operands[1:])
            if step[1] == "-done":
                done_of[start] = ins
    out = []
    for ins in instrs:
        step = _step(ins.opcode)
        if step is None:
            out.append(ins)
        elif step[1] == "-start":
            done = done_of.get(ins.name)
            out.append(dataclasses.replace(ins, opcode=_CALLING_STARTS.get(ins.opcode, step[0]),
                                           shape=done.shape if done is not None else ins.shape,
                                           operands=ins.operands + late.get(ins.name, [])))
        else:  # an update or a done is the value of the step before: what it waits for ran at the start
            out.append(dataclasses.replace(ins, opcode="bitcast", operands=ins.operands[:1], calls=[]))
    return out


def normalise(comps: dict[str, list]) -> dict[str, list]:
    """The computations of a parsed module (grader.suite.hlo.parse_computations) with every GPU/TPU form
    above rewritten into the one hlo reads; a CPU module comes back with the same instructions."""
    return {name: _library_calls(_async_chains([_untyped_operands(ins) for ins in instrs]))
            for name, instrs in comps.items()}
