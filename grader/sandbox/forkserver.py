"""The zygote's own side: a pre-warmed parent that imports JAX once, then forks each worker.

Starting a worker as a fresh process costs a Python start and ``import jax`` (about half a second
to a second of CPU). The zygote pays that once per grading run; each worker is then an ``os.fork``
of it (a few ms) that sets its device count and initialises its own backend.

Fork safety. JAX is not fork-safe once a backend exists (XLA starts thread pools; JAX itself only
warns about ``os.fork`` after backend initialisation). The zygote imports JAX but never creates a
backend (``jax.devices()`` is first called in the child), and before every fork it checks that it
has exactly one thread and no backend, refusing to fork otherwise (the grader then starts fresh
processes). XLA reads ``XLA_FLAGS`` when a backend is created, i.e. in the child; JAX reads its
``JAX_*`` variables at import, in the zygote. So the zygote is started with exactly the worker's
sanitised environment, and one zygote serves only workers that share that environment.

A forked worker is as isolated as a fresh one: its own session and process group, the memory
limit (set by :func:`grader.sandbox.worker.main`), the sanitised environment, its cwd in the scratch copy,
stdin from /dev/null, stdout/stderr into the grader's capture pipe, and no other open file
descriptor than its request and reply pipes; then it confines itself like any worker, which moves
it into namespaces of its own (the forked process stays as their holder: grader.sandbox.namespaces). Only the zygote can collect a forked worker's exit, so
the grader asks it to (``reap``); the zygote never reaps on its own, which keeps a dead worker's
pid (and so its process-group id) reserved until the grader has killed the group.

Control channel: a SOCK_SEQPACKET socket pair, one JSON message per packet; ``spawn`` carries the
worker's three pipe ends as SCM_RIGHTS file descriptors.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import socket
import sys
import time

from grader import processes
from grader.protocol import REPLY_FD, REQUEST_FD

PACKET = 1 << 16  # as grader.workers.zygote reads it


def fork_hazards() -> list[str]:
    """Why forking this process now would be unsafe (empty when it is safe)."""
    from jax._src import xla_bridge

    hazards = []
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        hazards.append(f"{threads} threads are running")
    if xla_bridge.backends_are_initialized():
        hazards.append("a JAX backend is initialised")
    return hazards


def _arrange_fds(request_r: int, reply_w: int, output_w: int) -> None:
    """stdin /dev/null, stdout+stderr the capture pipe, the pipes at 3 and 4, nothing else open."""
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (request_r, reply_w, output_w)]
    null = os.open(os.devnull, os.O_RDONLY)
    for target, fd in ((0, null), (1, high[2]), (2, high[2]), (REQUEST_FD, high[0]), (REPLY_FD, high[1])):
        os.dup2(fd, target)
    keep = {0, 1, 2, REQUEST_FD, REPLY_FD}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass  # the descriptor listdir itself used


def _become_worker(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: shed everything of the zygote, then run the worker. Never returns."""

    def become() -> None:
        sock.detach()  # its descriptor is closed below; the object must not close a reused number later
        os.setsid()
        _arrange_fds(*fds)
        os.chdir(request["cwd"])
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()  # a fresh process would not share the zygote's stream
        sys.argv = ["-c"]
        from grader.sandbox.worker import main as worker_main

        worker_main()

    from grader.sandbox.worker import run_then_exit

    run_then_exit(become)


def _spawn(sock: socket.socket, request: dict, fds: list[int], children: set[int]) -> dict:
    try:
        if len(fds) != 3:
            return {"error": f"spawn needs 3 file descriptors, got {len(fds)}"}
        if hazards := fork_hazards():
            return {"error": "not safe to fork: " + "; ".join(hazards)}
        pid = os.fork()
        if pid == 0:
            _become_worker(sock, request, fds)
        children.add(pid)
        processes.started.add(pid)
        return {"pid": pid}
    finally:
        for fd in fds:
            os.close(fd)


def _reap(request: dict, children: set[int]) -> dict:
    pid = request["pid"]
    if pid not in children:
        return {"error": f"{pid} is not a worker of this zygote"}
    ended = processes.reap(pid, request["timeout"])
    if ended is None:
        return {"running": True}
    children.discard(pid)
    return dataclasses.asdict(ended)


def _preload() -> dict[str, float]:
    """Import what every worker needs, so each fork starts with it; no backend is created here. Returns
    when each step ended (time.monotonic), for the run's timeline."""
    moments = {"start Python": time.monotonic()}
    import jax  # noqa: F401
    import jax.numpy  # noqa: F401

    moments["import JAX"] = time.monotonic()
    import jaxlib.mlir.dialects.mhlo  # noqa: F401 - first lowering imports it; do it once here

    import grader.sandbox.worker  # noqa: F401
    from grader.sandbox import confine

    confine.python_paths()  # computed once, for every fork
    moments["import the worker"] = time.monotonic()
    return moments


def _preload_later() -> tuple[float, ...]:
    """What only later workers need, done once the first is forked, while it starts: JAX's LAPACK kernels
    (SciPy's import), without which each clean worker's first program pays 0.2 s for them. A student's
    worker forked before has none and loads them itself if its code needs them. Returns (start, end), or ()
    if they could not be set up here."""
    began = time.monotonic()
    try:
        from jax._src.lax import linalg

        linalg.initialize_lapack()
    except Exception:  # noqa: BLE001 - each worker then sets them up itself, as without this step
        return ()
    return began, time.monotonic()


def _idle(sock: socket.socket) -> bool:
    return not select.select([sock], [], [], 0)[0]


def serve(sock: socket.socket) -> None:
    children: set[int] = set()
    later: tuple[float, ...] | None = None  # the later preload: not yet, (start, end) to tell, () told
    try:
        while True:
            if later is None and children and _idle(sock):
                later = _preload_later()
            try:
                raw, fds, _, _ = socket.recv_fds(sock, PACKET, 8)
            except OSError:
                return
            if not raw:
                return
            request = json.loads(raw)
            if request.get("op") == "spawn":
                reply = _spawn(sock, request, fds, children)
                if later and not reply.get("error"):
                    reply["later"], later = later, ()  # told once, for the run's timeline
            elif request.get("op") == "reap":
                reply = _reap(request, children)
            else:
                reply = {"error": f"unknown request {request.get('op')!r}"}
            sock.send(json.dumps(reply).encode())
    finally:
        for pid in children:
            processes.kill_group(pid)
            processes.reap(pid, None)
        processes.kill_adopted()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    processes.adopt_orphans()  # a worker that exits leaves its orphans here, where reap ends them
    try:
        moments = _preload()
        if hazards := fork_hazards():
            raise RuntimeError("; ".join(hazards))
    except BaseException as exc:  # noqa: BLE001 - the grader reads why, then starts fresh workers
        sock.send(json.dumps({"ready": False, "message": f"{type(exc).__name__}: {exc}"}).encode())
        return
    sock.send(json.dumps({"ready": True, "moments": moments}).encode())
    serve(sock)
    os._exit(0)  # nothing to clean up that the OS does not; tearing down JAX would cost the grader ~0.2 s
