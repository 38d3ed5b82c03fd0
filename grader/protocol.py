"""Plain-data messages between the grader and a worker.

Only this crosses the trust boundary: a JSON header and NumPy arrays in ``.npy`` form, read back
with ``allow_pickle=False``. A value is a Python scalar, string, None, a numeric/bool array, or a
list/tuple/dict (string keys) of these. Anything else is refused on the side that produced it, so
a student's object can never execute code in the grader (no pickle, no ``__eq__`` of theirs).

Frame on the wire: 8-byte big-endian header length, the UTF-8 JSON header, then each blob the header
lists, each preceded by its own 8-byte length.

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


def describe_type(value) -> str:
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _to_array(value) -> np.ndarray | None:
    """A plain ndarray copy for array-likes we accept (NumPy and JAX arrays, NumPy scalars)."""
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.array(value, copy=True, subok=False)
    elif hasattr(value, "__array__") and type(value).__module__.startswith(("jax", "jaxlib")):
        arr = np.array(np.asarray(value), copy=True, subok=False)
    else:
        return None
    if arr.dtype.kind not in _ALLOWED_KINDS or arr.dtype.fields is not None:
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
        if type(v) in (list, tuple):
            return {"__list__" if type(v) is list else "__tuple__": [walk(x, depth + 1) for x in v]}
        if type(v) is dict:
            if not all(type(k) is str for k in v):
                raise UnsupportedValue("a dict with non-string keys")
            return {"__dict__": {k: walk(x, depth + 1) for k, x in v.items()}}
        arr = _to_array(v)
        if arr is None:
            raise UnsupportedValue(f"an object of type {describe_type(v)}")
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        blobs.append(buf.getvalue())
        return {"__array__": len(blobs) - 1}

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
            return arr
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
    folder and it only runs programs other workers exported. ``compile_cache`` (watch mode only) is
    a folder the worker keeps JAX's compiled programs in between rounds, and may write besides
    ``code`` (see grader.sandbox.worker.use_compile_cache). With ``warm_up`` the worker compiles a
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

    def send(self, fd: int) -> None:
        send(fd, {"op": "settings", "settings": asdict(self)})

    @classmethod
    def receive(cls, fd: int) -> WorkerSettings:
        header, _ = receive(fd)
        if header.get("op") != "settings":
            raise ProtocolError(f"expected the worker's settings first, got {header.get('op')!r}")
        return cls(**header["settings"])
