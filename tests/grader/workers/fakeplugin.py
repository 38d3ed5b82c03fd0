"""A stand-in for the CUDA PJRT plugin, installed in a temporary environment: what it does to a worker, without a GPU.

JAX imports every module of the ``jax_plugins`` namespace package when it sets up its backends (in a
worker, after it confined itself) and calls its ``initialize()``, whatever ``JAX_PLATFORMS`` says. The
real ``jax_plugins.xla_cuda12`` (jax-cuda12-plugin 0.10.2) then loads the CUDA libraries: measured on
this project's machine (no GPU, ``JAX_PLATFORMS=cpu``, 8 emulated devices, after one pmap), a worker maps
4.56 GiB of address space with it against 1.51 GiB without (2.5 GiB of it the libraries' code: cublasLt
719 MiB, cusparse 465, nccl 401, xla_cuda_plugin.so 353, ...), holds 555 MB resident against 219, 794 MB
of VmData against 313, and runs the same 30 threads (jax-cuda13-plugin 0.10.2: 3.60 GiB, 598 MB resident,
794 MB of VmData, 30 threads). On a GPU the driver and XLA's GPU client start more
threads per device (not measured here: no GPU).

This module writes a plugin that does the same at import: it maps ``reserve_gib`` GiB of address space
it never touches (as the libraries' code is, read-only) and starts ``threads`` threads that wait forever.
Like the real plugin, whose C++ aborts when it cannot start a thread ("LLVM ERROR: pthread_create failed:
Resource temporarily unavailable"), it aborts the process when the mapping or a thread is refused.

The environment is a venv of this Python whose site-packages holds the plugin and a ``.pth`` naming the
tests' own site-packages (JAX and the rest), so ``python -I`` of it, and every worker it starts, finds both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

PLUGIN = '''
"""A fake PJRT plugin (tests/grader/workers/fakeplugin.py): address space and threads, as CUDA's takes them."""

import json, mmap, os, sys, threading

_held = []


def _fail(what):
    sys.stderr.write(f"LLVM ERROR: {what} failed: Resource temporarily unavailable\\n")
    sys.stderr.flush()
    os.abort()


def initialize():
    with open(os.path.join(os.path.dirname(__file__), "config.json")) as f:
        config = json.load(f)
    try:
        _held.append(mmap.mmap(-1, config["reserve_gib"] << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
                               | getattr(mmap, "MAP_NORESERVE", 0), prot=mmap.PROT_READ))
    except OSError:
        _fail("mmap")
    stop = threading.Event()
    for _ in range(config["threads"]):
        try:
            threading.Thread(target=stop.wait, daemon=True).start()
        except RuntimeError:
            _fail("pthread_create")
'''


def install(folder: Path, reserve_gib: int, threads: int) -> str:
    """A venv under ``folder`` with the fake plugin; returns its python."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], check=True, capture_output=True, text=True).stdout.strip())
    (site / "tests-site-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    plugin = site / "jax_plugins" / "fake_accelerator"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    configure(str(venv / "bin" / "python"), reserve_gib, threads)
    return str(venv / "bin" / "python")


def configure(python: str, reserve_gib: int, threads: int) -> None:
    """Change what the plugin of ``python``'s environment takes."""
    site = Path(python).parent.parent / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    (site / "jax_plugins" / "fake_accelerator" / "config.json").write_text(
        json.dumps({"reserve_gib": reserve_gib, "threads": threads}))
