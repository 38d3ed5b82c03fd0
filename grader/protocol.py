"""Plain-data messages between the grader and a worker.

Only this crosses the trust boundary: a JSON header and NumPy arrays in ``.npy`` form, read back
with ``allow_pickle=False``. A value is a Python scalar, string, None, a numeric/bool array, or a
list/tuple/dict (string keys) of these. Anything else is refused on the side that produced it, so
a student's object can never execute code in the grader (no pickle, no ``__eq__`` of theirs).
An :class:`ArraySpec` (an array's shape and dtype, no values) crosses too: what program mode sends
the student's worker in place of the inputs it will never see.

Frame on the wire: 8-byte big-endian header length, the UTF-8 JSON header, then each blob the header
lists, each preceded by its own 8-byte length.

JAX's narrow dtypes (bfloat16, the float8 family, int4: ``ml_dtypes``) are numbers a student may
return, and their dtype is part of the answer. NumPy saves them as raw bytes of no known type, so
they cross as unsigned integers of the same width with the dtype's name beside them, and the other
side views the bytes as that dtype again (a name from ``ml_dtypes``' own list, nothing else).

Sizes are capped where a message is read, before it is read, since a worker runs student code
that can write anything to its reply pipe: a header of at most MAX_HEADER_BYTES, a message of at
most MAX_MESSAGE_BYTES in all. The text a failure carries is cut further when it becomes a
:class:`grader.errors.StudentFailure` (REPLY_TEXT_CHARS per field), so no reply can make a report large.

A worker finds its request pipe at REQUEST_FD and its reply pipe at REPLY_FD. The first message
on the request pipe is its :class:`WorkerSettings`, so nothing about the grading run (which
submission, which suite) is on a command line or in an environment other processes can read.
"""

from __future__ import annotations

import io
import json
import os
import select
import struct
import time
from dataclasses import asdict, dataclass

import numpy as np

MAX_MESSAGE_BYTES = 512 << 20
MAX_HEADER_BYTES = 16 << 20  # the JSON part: a value's structure and strings (arrays travel as blobs)
_LEN = struct.Struct(">Q")
_ALLOWED_KINDS = "biufc"  # bool, signed, unsigned, float, complex
REQUEST_FD, REPLY_FD = 3, 4


class ProtocolError(Exception):
    """The other side sent something that is not a valid message (or nothing, in time)."""


class ChannelClosed(ProtocolError):
    """The other side closed its end: for a worker, it died."""


class ChannelTimeout(ProtocolError):
    """No complete message arrived before the deadline."""


class UnsupportedValue(TypeError):
    """A value that may not cross the boundary; the message names its type."""


# Program mode names every operation of a program before a clean worker compiles it: "KIND:LABEL",
# KIND the operation itself (stablehlo.all_reduce, read from the program), LABEL what the student's
# trace called it (psum; letters, digits and _ only; may be empty, and may lie). A compiled HLO
# instruction's op_name ends with the name of the operation it came from: one of PROGRAM_COLLECTIVES
# for a collective the program holds itself, another kind for one XLA's partitioner added while
# compiling (grader.sandbox.program_labels writes the names, grader.suite.hlo reads them).
PROGRAM_COLLECTIVES = frozenset({
    "stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.all_to_all", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "stablehlo.reduce_scatter", "sdy.all_reduce", "sdy.all_gather",
    "sdy.all_to_all", "sdy.collective_permute", "sdy.reduce_scatter"})
LABEL_SEPARATOR = ":"
# A collective of the program is named ``KIND:LABEL:cN`` (N: its place in the module, so that the compiled
# instructions it became map back to what was measured of it), and ``KIND:LABEL:cN:idle`` in the text the
# clean worker returns when replacing its result changed nothing of the answer (grader.sandbox.program_ablation),
# ``KIND:LABEL:cN:fresh`` for a ppermute measured to send nothing an earlier one brought
# (grader.sandbox.program_ring_steps).
COLLECTIVE_INDEX = "c"
IDLE_MARK = "idle"
FRESH_MARK = "fresh"
# How a device came to hold its share of an input (grader.sandbox.program_held measures it, grader.suite.work
# says it): received by a pmap or shard_map, placed by the program's own layout, or as the worker handed it over.
RECEIVED, PLACED, ARRIVED = "received", "placed", "arrived"


@dataclass(frozen=True)
class ArraySpec:
    """An array's shape and dtype without its values."""

    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class PerProcess:
    """A request's argument of which each process of a multi-process layout gets only its own element
    (``values[i]`` for process i; grader.workers.group). A process runs student code, which can read anything
    in its own memory: data meant for the other processes must never reach it (round 44: a global_mean walked
    up the stack to the probe's list of every process's rows and computed the mean with no communication)."""

    values: tuple


def for_process(request: dict, process: int) -> dict:
    """``request`` ({"args": ..., "kwargs": ...}) as process ``process`` receives it: each :class:`PerProcess`
    argument replaced by its own element."""
    def own(value):
        return value.values[process] if isinstance(value, PerProcess) else value

    return {"args": tuple(map(own, request["args"])), "kwargs": {k: own(v) for k, v in request["kwargs"].items()}}


def describe_type(value) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _narrow_dtypes():
    """ml_dtypes, JAX's package of narrow dtypes (installed with jaxlib; the grader side needs no JAX)."""
    import ml_dtypes

    return ml_dtypes


def is_narrow_dtype(dtype: np.dtype) -> bool:
    """A dtype of ml_dtypes (bfloat16, float8_e4m3fn, int4, ...): numbers NumPy does not know by kind."""
    return dtype.kind == "V" and dtype.fields is None and dtype.type.__module__ == "ml_dtypes"


def _carrier(itemsize: int) -> np.dtype:
    return np.dtype(f"<u{itemsize}")


def _narrow(name: str, carrier: np.ndarray) -> np.ndarray:
    """``carrier``'s bytes viewed as ml_dtypes' ``name``, refusing any name that is not one of its dtypes."""
    ml_dtypes = _narrow_dtypes()
    scalar = getattr(ml_dtypes, name, None) if isinstance(name, str) and not name.startswith("_") else None
    if not (isinstance(scalar, type) and issubclass(scalar, np.generic)) or not is_narrow_dtype(np.dtype(scalar)):
        raise ProtocolError(f"array of dtype {name!r} refused")
    dtype = np.dtype(scalar)
    if carrier.dtype != _carrier(dtype.itemsize):
        raise ProtocolError(f"array of dtype {name} carried as {carrier.dtype} refused")
    return carrier.view(dtype)


def _to_array(value) -> np.ndarray | None:
    """A plain ndarray copy for array-likes we accept (NumPy and JAX arrays, NumPy scalars)."""
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.array(value, copy=True, subok=False)
    elif hasattr(value, "__array__") and type(value).__module__.startswith(("jax", "jaxlib")):
        arr = np.array(np.asarray(value), copy=True, subok=False)
    else:
        return None
    if (arr.dtype.kind not in _ALLOWED_KINDS or arr.dtype.fields is not None) and not is_narrow_dtype(arr.dtype):
        raise UnsupportedValue(f"an array of dtype {arr.dtype} (only numeric and bool arrays can be graded)")
    return arr


def encode(value) -> tuple[object, list[bytes]]:
    """Split a value into a JSON-able tree and a list of ``.npy`` blobs."""
    blobs: list[bytes] = []

    def walk(v, depth=0):
        if depth > 32:
            raise UnsupportedValue("a structure nested more than 32 levels deep")
        if v is None or type(v) in (bool, int, str):
            return v
        if type(v) is float:
            return v if np.isfinite(v) else {"__float__": repr(v)}
        if type(v) is complex:
            return {"__complex__": [v.real, v.imag]}
        if type(v) is ArraySpec:
            return {"__spec__": [list(v.shape), v.dtype]}
        if type(v) in (list, tuple):
            return {"__list__" if type(v) is list else "__tuple__": [walk(x, depth + 1) for x in v]}
        if type(v) is dict:
            if not all(type(k) is str for k in v):
                raise UnsupportedValue("a dict with non-string keys")
            return {"__dict__": {k: walk(x, depth + 1) for k, x in v.items()}}
        arr = _to_array(v)
        if arr is None:
            raise UnsupportedValue(f"an object of type {describe_type(v)}")
        narrow = is_narrow_dtype(arr.dtype)
        buf = io.BytesIO()
        np.save(buf, arr.view(_carrier(arr.dtype.itemsize)) if narrow else arr, allow_pickle=False)
        blobs.append(buf.getvalue())
        return {"__array__": len(blobs) - 1, **({"dtype": arr.dtype.name} if narrow else {})}

    return walk(value), blobs


def decode(tree, blobs: list[bytes]):
    """Inverse of :func:`encode`; arrays are loaded with ``allow_pickle=False``."""

    def walk(v):
        if not isinstance(v, dict):
            return v
        if "__array__" in v:
            arr = np.load(io.BytesIO(blobs[v["__array__"]]), allow_pickle=False)
            if arr.dtype.kind not in _ALLOWED_KINDS:
                raise ProtocolError(f"array of dtype {arr.dtype} refused")
            return _narrow(v["dtype"], arr) if "dtype" in v else arr
        if "__list__" in v:
            return [walk(x) for x in v["__list__"]]
        if "__tuple__" in v:
            return tuple(walk(x) for x in v["__tuple__"])
        if "__dict__" in v:
            return {k: walk(x) for k, x in v["__dict__"].items()}
        if "__float__" in v:
            return float(v["__float__"])
        if "__complex__" in v:
            return complex(*v["__complex__"])
        if "__spec__" in v:
            try:
                shape, dtype = v["__spec__"]
                spec = ArraySpec(tuple(int(d) for d in shape), str(np.dtype(dtype)))
            except (TypeError, ValueError) as exc:
                raise ProtocolError(f"malformed array spec: {exc}") from None
            if np.dtype(spec.dtype).kind not in _ALLOWED_KINDS:
                raise ProtocolError(f"array spec of dtype {spec.dtype} refused")
            return spec
        raise ProtocolError(f"unknown value tag {sorted(v)}")

    return walk(tree)


def send(fd: int, header: dict, blobs: list[bytes] = ()) -> None:
    """Write one message (header must be JSON-able; it lists how many blobs follow)."""
    header = dict(header, nblobs=len(blobs))
    raw = json.dumps(header).encode()
    parts = [_LEN.pack(len(raw)), raw]
    for b in blobs:
        parts += [_LEN.pack(len(b)), b]
    data = b"".join(parts)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise ChannelTimeout("no reply in time")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _read_len(fd: int, deadline: float | None, budget: list[int]) -> int:
    (n,) = _LEN.unpack(_read_exact(fd, _LEN.size, deadline))
    budget[0] -= n
    if budget[0] < 0:
        raise ProtocolError(f"message larger than {MAX_MESSAGE_BYTES >> 20} MiB refused")
    return n


def receive(fd: int, deadline: float | None = None) -> tuple[dict, list[bytes]]:
    """Read one message; ``deadline`` is a ``time.monotonic()`` value or None to wait forever."""
    budget = [MAX_MESSAGE_BYTES]
    size = _read_len(fd, deadline, budget)
    if size > MAX_HEADER_BYTES:
        raise ProtocolError(f"a header larger than {MAX_HEADER_BYTES >> 20} MiB refused")
    raw = _read_exact(fd, size, deadline)
    try:
        header = json.loads(raw)
        nblobs = int(header["nblobs"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"malformed header: {exc}") from None
    blobs = [_read_exact(fd, _read_len(fd, deadline, budget), deadline) for _ in range(nblobs)]
    return header, blobs


@dataclass(frozen=True)
class WorkerSettings:
    """What one worker process is for: the first message the grader sends it.

    ``code`` is the scratch copy of the submission (the worker's cwd), ``probes`` the folder of the
    suite's probe modules; ``distributed`` (coordinator, process, processes, timeout_s) makes the
    worker one process of a group joined by ``jax.distributed``, ``devices`` then being its local
    device count. A ``clean`` worker never imports student code: ``code`` is then its own empty
    folder and it only runs programs other workers exported. ``compile_cache`` is a folder the worker
    writes the programs it compiles to, besides ``code`` (a trusted worker's outbox, or watch mode's
    cache of one student's workers); ``shared_cache`` the cache only trusted processes fill, which it
    reads by name (see grader.sandbox.compile_cache). With ``warm_up`` the worker compiles a
    small program of the grader's before it reports ready (a spare, see grader.workers.spares).
    """

    code: str
    probes: str
    backend: str
    devices: int
    memory_mb: int = 0
    distributed: dict | None = None
    clean: bool = False
    sandbox_off: tuple[str, ...] = ()  # mechanisms to leave out, for measuring only (grader.sandbox.confine.MECHANISMS)
    compile_cache: str = ""
    warm_up: bool = False
    shared_cache: str = ""

    def send(self, fd: int) -> None:
        send(fd, {"op": "settings", "settings": asdict(self)})

    @classmethod
    def receive(cls, fd: int) -> WorkerSettings:
        header, _ = receive(fd)
        if header.get("op") != "settings":
            raise ProtocolError(f"expected the worker's settings first, got {header.get('op')!r}")
        return cls(**header["settings"])
