"""The worker: the only process that imports and runs student code.

Started by :mod:`grader.workers` as ``python -I -c ... grader.worker`` in a scratch copy of the
submission, with a sanitised environment. It configures JAX for one backend configuration, then
answers requests read from a dedicated pipe (never stdin/stdout, which belong to the student and are
captured by the grader). Every reply is plain data (:mod:`grader.protocol`); every failure of
student code is turned into a classified error the grader can explain in one sentence.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import traceback

from grader import protocol


class StudentCodeError(Exception):
    """A classified failure of student code: ``kind`` is one of the names in grader.verdicts."""

    def __init__(self, kind: str, message: str, where: str | None = None, exc_type: str | None = None):
        super().__init__(message)
        self.kind, self.message, self.where, self.exc_type = kind, message, where, exc_type

    def as_reply(self) -> dict:
        return {"ok": False, "kind": self.kind, "message": self.message, "where": self.where,
                "exc_type": self.exc_type}


class Context:
    """Where the submission and the suite's probes live for this worker."""

    submission: str = ""
    suite: str = ""


def _student_frame(tb) -> str | None:
    """file:line of the deepest traceback frame inside the submission, as a relative path."""
    where = None
    for frame, lineno in traceback.walk_tb(tb):
        path = os.path.abspath(frame.f_code.co_filename)
        if Context.submission and path.startswith(Context.submission + os.sep):
            where = f"{os.path.relpath(path, Context.submission)}:{lineno}"
    return where


def _first_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def classify(exc: BaseException, what: str) -> StudentCodeError:
    """Turn an exception raised while running ``what`` into a StudentCodeError."""
    if isinstance(exc, StudentCodeError):
        return exc
    where = _student_frame(exc.__traceback__)
    name = type(exc).__name__
    if isinstance(exc, NotImplementedError):
        return StudentCodeError("not_started", f"{what} still raises NotImplementedError", where, name)
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return StudentCodeError("memory", f"{what} ran out of memory: {_first_line(exc)}", where, name)
    if isinstance(exc, SystemExit):
        return StudentCodeError("exited", f"{what} called sys.exit({exc.code!r})", where, name)
    if isinstance(exc, KeyboardInterrupt):
        return StudentCodeError("raised", f"{what} raised KeyboardInterrupt", where, name)
    return StudentCodeError("raised", f"{what} raised {name}: {_first_line(exc)}", where, name)


def import_student_module(module: str):
    """Import a submission module, turning a missing file, SyntaxError or ImportError into a verdict."""
    import importlib

    if module in sys.modules:
        return sys.modules[module]
    path = os.path.join(Context.submission, module + ".py")
    if not os.path.isfile(path):
        raise StudentCodeError("missing_module", f"{module}.py is missing from your submission")
    try:
        return importlib.import_module(module)
    except SyntaxError as exc:
        where = f"{os.path.relpath(exc.filename or path, Context.submission)}:{exc.lineno}"
        raise StudentCodeError("import_error", f"{module}.py has a SyntaxError: {exc.msg}", where,
                               "SyntaxError") from None
    except BaseException as exc:  # noqa: BLE001 - anything at import time is the student's
        err = classify(exc, f"importing {module}.py")
        if err.kind == "raised":
            err.kind = "import_error"
        raise err from None


def student_function(target: str):
    """The callable ``module.function`` from the submission, or a 'missing_function' verdict."""
    module, _, name = target.rpartition(".")
    mod = import_student_module(module)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise StudentCodeError("missing_function", f"{module}.py has no function {name}")
    return fn


def check_signature(fn, target: str, args, kwargs) -> None:
    """Name a signature that cannot take the arguments the test passes, before running anything."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        name = target.rpartition(".")[2]
        raise StudentCodeError("wrong_signature", f"{name}{sig} cannot be called with "
                               f"{len(args)} positional argument(s){' and ' + ', '.join(kwargs) if kwargs else ''}: {exc}")


def _load_probes(module: str):
    import importlib.util

    key = f"_grader_probes_{module}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(Context.suite, module + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def run_request(op: str, target: str, args, kwargs):
    """Run one request and return the plain value to send back."""
    import jax

    if op == "probe":
        module, _, name = target.rpartition(".")
        return getattr(_load_probes(module), name)(*args, **kwargs)
    fn = student_function(target)
    check_signature(fn, target, args, kwargs)
    if op == "call":
        return fn(*args, **kwargs)
    if op == "jaxpr":
        return str(jax.make_jaxpr(fn)(*args, **kwargs))
    if op == "compiled":
        try:
            lowered = jax.jit(fn).lower(*args, **kwargs)
        except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError) as exc:
            raise StudentCodeError("not_traceable", f"{target.rpartition('.')[2]} cannot be compiled "
                                   "with jax.jit (it turns a traced value into a concrete NumPy value or "
                                   f"Python number): {_first_line(exc, 160)}", _student_frame(exc.__traceback__),
                                   type(exc).__name__) from None
        return lowered.compile().as_text()
    raise ValueError(f"unknown request {op!r}")


def serve(request_fd: int, reply_fd: int) -> None:
    while True:
        try:
            header, blobs = protocol.receive(request_fd)
        except protocol.ChannelClosed:
            return
        op, target = header.get("op"), header.get("target", "")
        if op == "exit":
            return
        what = target.rpartition(".")[2] + "()" if op != "probe" else target.rpartition(".")[2]
        start = time.perf_counter()
        try:
            payload = protocol.decode(header.get("args"), blobs)
            args, kwargs = payload["args"], payload["kwargs"]
            value = run_request(op, target, args, kwargs)
            tree, out = protocol.encode(value)
            reply, reply_blobs = {"ok": True, "value": tree}, out
        except protocol.UnsupportedValue as exc:
            reply, reply_blobs = {"ok": False, "kind": "bad_return",
                                  "message": f"{what} returned {exc}, expected arrays, numbers or "
                                             "tuples/lists/dicts of them", "where": None}, []
        except BaseException as exc:  # noqa: BLE001 - student code may raise anything
            reply, reply_blobs = classify(exc, what).as_reply(), []
        reply["elapsed_s"] = time.perf_counter() - start
        protocol.send(reply_fd, reply, reply_blobs)


DISTRIBUTED_VARIABLE = "GRADER_DISTRIBUTED"


def configure_jax(backend: str, devices: int, distributed: dict | None = None):
    """Import JAX for one configuration and return a description of what it sees.

    ``distributed`` (coordinator, process, processes, timeout_s) makes this worker one process of
    a group joined by ``jax.distributed.initialize``; ``devices`` is then its local device count.
    """
    import jax

    if backend == "cpu":
        jax.config.update("jax_num_cpu_devices", devices)
    if distributed:
        if backend == "cpu":
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.config.update("jax_enable_preemption_service", False)  # else SIGTERM is ignored once joined
        address = distributed["coordinator"]
        jax.distributed.initialize(address, distributed["processes"], distributed["process"],
                                   cluster_detection_method="deactivate", coordinator_bind_address=address,
                                   initialization_timeout=distributed["timeout_s"],
                                   shutdown_timeout_seconds=distributed["timeout_s"])
    local = jax.local_devices()
    if len(local) != devices:
        raise RuntimeError(f"asked for {devices} devices, JAX sees {len(local)}: {local}")
    return {"jax_version": jax.__version__, "platform": local[0].platform, "device_kind": local[0].device_kind,
            "devices": len(local), "process_index": jax.process_index(), "process_count": jax.process_count()}


def confine_self(off: str, distributed: dict | None) -> dict:
    """Confine this worker (before any student code or JAX backend); returns the sandbox record.

    It may write only its scratch (the submission copy, its cwd) and read the probes copied beside
    it; a process of a multi-process group may bind its coordinator's port and ephemeral ones.
    """
    from grader.sandbox import confine

    ports = None
    if distributed:
        ports = (int(distributed["coordinator"].rpartition(":")[2]), 0)
    policy = confine.Policy(scratch=Context.submission, read_only=(confine.ENGINE_DIR, Context.suite),
                            tcp_ports=ports, tcp_connect_any=bool(distributed),
                            off=frozenset(m for m in off.split(",") if m))
    return confine.confine(policy)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="grader.worker")
    p.add_argument("--request-fd", type=int, required=True)
    p.add_argument("--reply-fd", type=int, required=True)
    p.add_argument("--submission", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--devices", type=int, required=True)
    p.add_argument("--memory-mb", type=int, default=0)
    p.add_argument("--sandbox-off", default="", help="mechanisms to leave out (comma list), for measuring only")
    a = p.parse_args(argv)
    if a.memory_mb:
        limit = a.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    Context.submission, Context.suite = os.path.abspath(a.submission), os.path.abspath(a.suite)
    settings = os.environ.pop(DISTRIBUTED_VARIABLE, None)
    distributed = json.loads(settings) if settings else None
    sandbox = confine_self(a.sandbox_off, distributed)
    try:
        info = configure_jax(a.backend, a.devices, distributed)
    except BaseException as exc:  # noqa: BLE001 - reported to the grader, which explains it
        protocol.send(a.reply_fd, {"ready": False, "message": f"{type(exc).__name__}: {_first_line(exc)}"})
        return
    sys.path.insert(0, Context.submission)  # after JAX and NumPy: a student's numpy.py shadows nothing
    protocol.send(a.reply_fd, dict(info, ready=True, sandbox=sandbox))
    serve(a.request_fd, a.reply_fd)
