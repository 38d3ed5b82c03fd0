"""The worker: the only process that imports and runs student code.

Started by :mod:`grader.workers` (forked from the zygote, or as a fresh ``python -I``) in a scratch
copy of the submission, with a sanitised environment. It reads its :class:`WorkerSettings` from
the request pipe, confines itself (:mod:`grader.sandbox.confine`: before JAX starts a thread or any
student code is read), configures JAX for one backend configuration, then answers requests read from
that pipe (never stdin/stdout, which belong to the student and are captured by the grader). Every
reply is plain data (:mod:`grader.protocol`); every failure of student code is a StudentFailure
the grader can explain in one sentence.

A *clean* worker (``WorkerSettings.clean``) is the same process for the same configuration that
never imports student code: it only compiles and runs programs another worker exported
(:mod:`grader.sandbox.program_runner`), so what the grader reads of a program is never produced
where student code ran.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import NoReturn

from grader import protocol
from grader.errors import UNNAMED_CALL, StudentFailure
from grader.layout import plural
from grader.protocol import REPLY_FD, REQUEST_FD, ArraySpec, WorkerSettings
from grader.sandbox import compile_cache, confine, traced_collectives
from grader.sandbox.program_export import export_program
from grader.sandbox.program_runner import run_program
from grader.sandbox.student_code import called_function, check_signature, classify, first_line, new_request, \
    student_function, use_submission

_probes_folder = ""
_clean = False  # a clean worker: runs programs handed over as data, never student code (see main)


def _load_probes(module: str):
    import importlib.util

    key = f"_grader_probes_{module}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(_probes_folder, module + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def _is_probe(target: str) -> bool:
    return bool(_probes_folder) and os.path.isfile(os.path.join(_probes_folder, target.rpartition(".")[0] + ".py"))


def _what(op: str, target: str, exc: BaseException | None = None) -> str:
    """How a failure names the code it ran: the student's function, never a probe of the suite (the
    student has never seen one), but the student's function that probe was running."""
    if op == "probe" or (op in ("program", "collectives") and _is_probe(target)):
        called = called_function(exc)
        return f"{called}()" if called else UNNAMED_CALL
    return target.rpartition(".")[2] + "()"


def _program_function(target: str, args, kwargs):
    """The function program mode exports: a student function with ``kwargs`` fixed, or the function
    a probe returns when called with ``kwargs`` (e.g. a student's per-device function in jax.pmap)."""
    module, _, name = target.rpartition(".")
    if _is_probe(target):
        return getattr(_load_probes(module), name)(**kwargs)
    fn = student_function(target)
    check_signature(fn, target, args, kwargs)
    return functools.partial(fn, **kwargs) if kwargs else fn


def run_request(op: str, target: str, args, kwargs):
    """Run one request and return the plain value to send back.

    For "program", ``args`` are the shapes and dtypes of the inputs (ArraySpecs), never their values;
    for "run_program" (a clean worker's only request) they are the sets of inputs to run it on.
    """
    if _clean:
        if op != "run_program":
            raise ValueError(f"a clean worker only runs programs, not {op!r}")
        return run_program(kwargs["program"], list(args), target.rpartition(".")[2], kwargs.get("arrives"),
                           kwargs.get("ablate", True) is not False, kwargs.get("tolerance"), kwargs.get("called") or "")
    if op == "probe":
        module, _, name = target.rpartition(".")
        return getattr(_load_probes(module), name)(*args, **kwargs)
    if op == "program":
        return export_program(_program_function(target, args, kwargs), args, _what(op, target).removesuffix("()"))
    if op == "collectives":
        return traced_collectives.collectives(_program_function(target, args, kwargs), args)
    if op == "call":
        fn = student_function(target)
        check_signature(fn, target, args, kwargs)
        return fn(*args, **kwargs)
    raise ValueError(f"unknown request {op!r}")


def _answer(header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    """The reply to one request: its value, or the failure that stopped it."""
    op, target = header.get("op"), header.get("target", "")
    new_request()
    try:
        payload = protocol.decode(header.get("args"), blobs)
        value = run_request(op, target, payload["args"], payload["kwargs"])
        tree, out = protocol.encode(value)
        return {"ok": True, "value": tree}, out
    except protocol.UnsupportedValue as exc:
        return StudentFailure("bad_return", f"{_what(op, target)} returned {exc}, expected arrays, numbers or "
                              "tuples/lists/dicts of them").as_reply(), []
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything
        return classify(exc, _what(op, target, exc)).as_reply(), []


def serve(request_fd: int, reply_fd: int) -> None:
    while True:
        try:
            header, blobs = protocol.receive(request_fd)
        except protocol.ChannelClosed:
            return
        if header.get("op") == "exit":
            return
        confine.fill_scratch()  # what the grader copied since the worker started (a spare's submission)
        began, start = time.monotonic(), time.perf_counter()
        reply, reply_blobs = _answer(header, blobs)
        reply.update(elapsed_s=time.perf_counter() - start, began=began)
        protocol.send(reply_fd, reply, reply_blobs)


def warm_up(clean: bool) -> None:
    """Compile and run one small collective program over every local device, so the first program
    of the student's (in a clean worker: the first exported one, by the same path) does not also pay
    for setting up XLA and JAX in this process: the work a spare does before the save that needs it."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    n = jax.local_device_count()

    def total(v):
        return jax.pmap(lambda part: lax.psum(jnp.dot(part, part), "warm"), axis_name="warm")(
            jnp.pad(v, (0, n * 3 - v.shape[0])).reshape(n, 3))[0]

    values = (np.ones(n * 3 - 1, np.float32),)
    if clean:
        specs = (ArraySpec(values[0].shape, str(values[0].dtype)),)
        run_program(export_program(total, specs, "warm_up"), [values], "warm_up")
    else:
        jax.block_until_ready(total(*values))


def _give_back_free_memory() -> None:
    """Return the heap the warm-up's compile freed to the system (glibc keeps it otherwise): a spare then
    holds about 7 MB less while it waits for the next save (bench/watch.py prints what the spares hold)."""
    import ctypes

    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc only
    if trim is not None:
        trim(0)


def _await_coordinator(address: str, timeout_s: float) -> float:
    """Wait until process 0's coordinator accepts connections (polling every 10 ms, up to ``timeout_s``);
    returns the seconds left of ``timeout_s``, for JAX's own connect.

    A process that asks JAX to connect before the coordinator listens is refused and retried only after
    gRPC's first back-off, a second later: most of a group's start-up (measured: 0.9 s of 0.93). If it
    never listens, JAX's own connect below reports the failure as before.
    """
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            break
        except OSError:
            time.sleep(0.01)
    return max(0.0, deadline - time.monotonic())


def configure_jax(settings: WorkerSettings) -> dict:
    """Import JAX for one configuration and return a description of what it sees."""
    import jax

    # JAX removes its own frames from the tracebacks it re-raises; whose code raised an exception
    # (student_code.raised_in) is read from the deepest frame, so they must stay.
    jax.config.update("jax_traceback_filtering", "off")
    if settings.backend == "cpu":
        jax.config.update("jax_num_cpu_devices", settings.devices)
    group = settings.distributed
    if group:
        if settings.backend == "cpu":
            jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.config.update("jax_enable_preemption_service", False)  # else SIGTERM is ignored once joined
        address, left = group["coordinator"], group["timeout_s"]
        if group["process"]:
            left = _await_coordinator(address, left)  # one time limit for the wait and the connect
        jax.distributed.initialize(address, group["processes"], group["process"],
                                   cluster_detection_method="deactivate", coordinator_bind_address=address,
                                   initialization_timeout=max(1, int(left)),
                                   shutdown_timeout_seconds=group["timeout_s"])
    local = jax.local_devices()
    if len(local) != settings.devices:
        raise RuntimeError(f"asked for {plural(settings.devices, 'device')}, JAX sees {len(local)}: {local}")
    return {"jax_version": jax.__version__, "platform": local[0].platform, "device_kind": local[0].device_kind,
            "devices": len(local), "process_index": jax.process_index(), "process_count": jax.process_count()}


def run_then_exit(body: Callable[[], None]) -> NoReturn:
    """Run ``body`` (a worker's life), then end the process at once, with its exit code.

    By then the worker has sent every answer and its output is in the pipe, so nothing of its teardown is
    wanted: tearing down JAX took about 0.2 s of CPU, and in a multi-process group jax.distributed's
    shutdown barrier kept every member 0.6 s. A crash is printed to the captured output first.
    """
    code = 1
    try:
        body()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported on the captured output, which the grader reads
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the pipe may be gone; exiting is all that is left
                pass
        os._exit(code)


def main(request_fd: int = REQUEST_FD, reply_fd: int = REPLY_FD) -> None:
    global _probes_folder, _clean
    settings = WorkerSettings.receive(request_fd)
    moments = {"receive the settings": time.monotonic()}  # when each step of the start-up ended (the timeline's)
    _clean = settings.clean
    if _clean:  # nothing of the student's: its own folder for cwd, HOME and TMPDIR, no probes
        os.environ.update(HOME=settings.code, TMPDIR=os.path.join(settings.code, ".tmp"))
    else:
        _probes_folder = os.path.abspath(settings.probes)
    try:
        sandbox = confine.confine_worker(settings.code, _probes_folder, settings.backend, settings.distributed,
                                         settings.sandbox_off, settings.compile_cache, settings.memory_mb,
                                         settings.shared_cache)
        moments["confine itself"] = time.monotonic()
        info = configure_jax(settings)
        moments["set up JAX's backend"] = time.monotonic()
        if settings.warm_up:
            warm_up(_clean)  # before the cache is on, so XLA's compiler is what it sets up
            _give_back_free_memory()
            moments["warm up"] = time.monotonic()
        cache = compile_cache.use(settings.shared_cache, settings.compile_cache, locations=_clean)
    except BaseException as exc:  # noqa: BLE001 - reported to the grader, which explains it
        protocol.send(reply_fd, {"ready": False, "message": f"{type(exc).__name__}: {first_line(exc)}"})
        return
    if not _clean:
        use_submission(settings.code)
    protocol.send(reply_fd, dict(info, ready=True, sandbox=sandbox, moments=moments, compile_cache=cache))
    serve(request_fd, reply_fd)
