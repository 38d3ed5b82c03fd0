"""Where workers get their devices: emulated CPU devices, or this machine's real GPUs or TPUs.

The grader process never imports JAX, so it learns what the machine has from a short-lived probe
process (once per grading process; ``--backend cpu`` needs no probe at all). The resolved
:class:`Backend` then answers what the rest of the engine asks: can a configuration run here (and
if not, the reason the report prints), on which devices it runs (``--backend auto`` sends what the
accelerators cannot take to emulated CPU devices), which environment variables give one worker
process its own share of the devices, and whether two workers may hold the same device at once.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field

from grader import processes
from grader.errors import GraderError, UsageError
from grader.layout import plural

PROBE_TIMEOUT_S = 120.0
GPU_PLATFORMS = ("cuda", "rocm")
# The variable that restricts a process to some of the machine's devices (TPU: chips).
VISIBLE_VARIABLE = {"cuda": "CUDA_VISIBLE_DEVICES", "rocm": "HIP_VISIBLE_DEVICES", "tpu": "TPU_VISIBLE_CHIPS"}
# libtpu runs a process on a sub-rectangle of chips; these are the shapes of 1, 2 and 4 chips.
TPU_CHIP_BOUNDS = {1: "1,1,1", 2: "1,2,1", 4: "2,2,1"}
# Variables a real accelerator may need from the grader's own environment: the libraries' folder and, on a TPU VM,
# what describes its chips (TPU_TOPOLOGY, TPU_ACCELERATOR_TYPE, ...; without TPU_SKIP_MDS_QUERY libtpu asks a
# metadata server for them, which a machine without network never answers) and libtpu's own settings.
PASSTHROUGH = ("LD_LIBRARY_PATH",)
PASSTHROUGH_PREFIXES = ("TPU_", "LIBTPU_")
# A float32 matrix product on a TPU (bfloat16 passes) or a recent NVIDIA GPU (TF32) agrees with NumPy to about three
# digits at JAX's default precision: the reference solution failed the course's value tests on the lent TPU. The
# course grades distribution, not the accelerator's rounding, so every accelerator worker multiplies at float32's own.
ACCELERATOR_PRECISION = {"JAX_DEFAULT_MATMUL_PRECISION": "highest"}
INSTALL_HINT = {
    "gpu": "install JAX's CUDA plugin with pip install 'pmap-course[cuda]'",
    "tpu": "on a TPU VM, install libtpu with pip install 'pmap-course[tpu]'",
}


@dataclass(frozen=True)
class Platform:
    """What JAX reports for one platform: how many devices, of what kind, and devices per chip."""

    count: int
    kind: str
    per_chip: int = 1


@dataclass(frozen=True)
class Inventory:
    """Every platform JAX can use on this machine, by JAX's name (cpu, cuda, rocm, tpu)."""

    jax_version: str
    platforms: dict[str, Platform]

    def describe(self) -> str:
        return ", ".join(f"{name} ({p.count} x {p.kind})" for name, p in self.platforms.items()) or "no devices"


@dataclass(frozen=True)
class Backend:
    """A resolved backend: ``name`` is what the report says, ``platform`` what the workers use."""

    name: str
    platform: str
    kind: str
    available: int | None = None  # real devices on this machine; None: emulated, any count
    per_chip: int = 1
    ids: tuple[str, ...] = field(default=())  # device (TPU: chip) ids as this process's environment numbers them
    fallback: bool = False  # --backend auto: what the accelerators cannot take runs on emulated CPU devices

    @property
    def emulated(self) -> bool:
        return self.available is None

    @property
    def exclusive(self) -> bool:
        """Only one process at a time may open a TPU chip; GPUs and CPUs can be shared."""
        return self.platform == "tpu"

    def unavailable(self, devices: int, processes: int | None = None) -> str | None:
        """Why ``processes`` x ``devices`` cannot run here (None: it can), in words for the report."""
        if processes and (refused := no_localhost_tcp()):
            return refused
        return None if self.fallback else self.refuses(devices, processes)

    def placed(self, devices: int, processes: int | None = None) -> Backend:
        """The backend ``processes`` x ``devices`` runs on: this one, or, under ``--backend auto``, emulated
        CPU devices when the accelerators cannot take it."""
        return EMULATED if self.fallback and self.refuses(devices, processes) else self

    def refuses(self, devices: int, processes: int | None = None) -> str | None:
        """Why this machine's own devices cannot run ``processes`` x ``devices`` (None: they can)."""
        if self.emulated:
            return None
        total = devices * (processes or 1)
        if total > self.available:
            return f"needs {plural(total, 'device')}, this machine has {self.available}"
        if self.platform == "tpu":
            if processes:
                return "multi-process layouts run on the cpu and gpu backends"
            chips, rest = divmod(devices, self.per_chip)
            if devices != self.available and (rest or chips not in TPU_CHIP_BOUNDS):
                return (f"a TPU worker gets 1, 2 or 4 whole chips ({plural(self.per_chip, 'device')} each) or the whole "
                        f"machine, not {plural(devices, 'device')}")
        return None

    def worker_variables(self, devices: int, process: int = 0) -> dict[str, str]:
        """Environment for worker ``process`` of a configuration: its own ``devices`` devices."""
        if self.emulated:
            return {}
        env = {"JAX_PLATFORMS": self.platform, **ACCELERATOR_PRECISION, **passed_through(os.environ)}
        if self.platform in GPU_PLATFORMS:
            env[VISIBLE_VARIABLE[self.platform]] = ",".join(self.ids[process * devices:(process + 1) * devices])
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # workers for several device counts share GPUs
        elif self.platform == "tpu" and devices != self.available:
            chips = devices // self.per_chip
            env.update(TPU_CHIPS_PER_PROCESS_BOUNDS=TPU_CHIP_BOUNDS[chips], TPU_PROCESS_BOUNDS="1,1,1",
                       TPU_VISIBLE_CHIPS=",".join(self.ids[:chips]))
        return env

    def memory_limit_mb(self, memory_mb: int) -> int:
        """The address-space limit for workers: CUDA and libtpu reserve far more than they use."""
        return memory_mb if self.platform == "cpu" else 0

    def describe(self) -> str:
        if self.emulated:
            return "emulated CPU devices"
        return f"{self.kind}, {self.available} on this machine"


EMULATED = Backend(name="cpu", platform="cpu", kind="cpu")


@functools.cache
def no_localhost_tcp() -> str | None:
    """Why no multi-process layout can run on this machine, on any backend (None: they can): jax.distributed's
    coordinator listens on a localhost TCP port (grader.workers.group), and a sandbox without a network stack has
    no TCP at all (the TPU machine lent in December 2026, gVisor with no network: "Address family not
    supported"). Told as "not run here", not as the student's failure to be checked."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
    except OSError as exc:
        return f"multi-process layouts need a TCP port on localhost, which this machine does not give ({exc.strerror})"
    return None


def passed_through(environ) -> dict[str, str]:
    """What of ``environ`` a process on a real accelerator gets (PASSTHROUGH, PASSTHROUGH_PREFIXES)."""
    return {k: v for k, v in environ.items() if k in PASSTHROUGH or k.startswith(PASSTHROUGH_PREFIXES)}


def _accelerator(inventory: Inventory, requested: str) -> str | None:
    wanted = {"gpu": GPU_PLATFORMS, "tpu": ("tpu",), "auto": (*GPU_PLATFORMS, "tpu")}[requested]
    return next((p for p in wanted if p in inventory.platforms), None)


def _ids(platform: str, count: int, environ) -> tuple[str, ...]:
    """The ids to hand out: the grader's own restriction if it has one, else 0..count-1."""
    own = environ.get(VISIBLE_VARIABLE[platform], "")
    ids = tuple(i.strip() for i in own.split(",") if i.strip())
    return ids[:count] if len(ids) >= count else tuple(str(i) for i in range(count))


def resolve(requested: str, inventory: Inventory | None = None, environ=None) -> Backend:
    """The backend for ``--backend requested``; asks the probe (once) unless given an inventory.

    ``auto`` takes a GPU, else a TPU, else emulated CPU devices, and runs a configuration the
    accelerators cannot take (more devices than the machine has) on emulated CPU devices
    (:meth:`Backend.placed`). A GPU or TPU that JAX does not see is a usage error that says what it
    does see.
    """
    if requested == "cpu":
        return EMULATED
    inventory = inventory if inventory is not None else probe()
    platform = _accelerator(inventory, requested)
    if platform is None:
        if requested == "auto":
            return EMULATED
        raise UsageError(f"--backend {requested}: JAX sees no {requested.upper()} on this machine, only "
                         f"{inventory.describe()}; {INSTALL_HINT[requested]}, or grade with --backend cpu")
    found = inventory.platforms[platform]
    chips = found.count // found.per_chip
    return Backend(name="tpu" if platform == "tpu" else "gpu", platform=platform, kind=found.kind,
                   available=found.count, per_chip=found.per_chip, fallback=requested == "auto",
                   ids=_ids(platform, chips if platform == "tpu" else found.count, os.environ if environ is None else environ))


def report_devices() -> None:
    """Probe side: print what JAX sees on each platform as one JSON line (run in a subprocess)."""
    import jax

    platforms = {}
    for name in (*GPU_PLATFORMS, "tpu", "cpu"):
        try:
            devices = jax.devices(name)
        except (RuntimeError, ValueError):  # JAX has no such platform here
            continue
        per_chip = 1 + max(getattr(d, "core_on_chip", 0) for d in devices)
        platforms[name] = {"count": len(devices), "kind": devices[0].device_kind, "per_chip": per_chip}
    print(json.dumps({"jax_version": jax.__version__, "platforms": platforms}))


@functools.lru_cache(maxsize=1)
def probe() -> Inventory:
    """Ask a fresh Python process what JAX sees (the grader itself never imports JAX)."""
    engine_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    boot = processes.boot(engine_parent, "from grader.workers.backends import report_devices; report_devices()")
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8", "TF_CPP_MIN_LOG_LEVEL": "2",
           "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **passed_through(os.environ),
           **{k: os.environ[k] for k in ("HOME", *VISIBLE_VARIABLE.values()) if k in os.environ}}
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", boot], env=env, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise GraderError(f"asking JAX which devices this machine has took over {PROBE_TIMEOUT_S:g} s") from None
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        return Inventory(data["jax_version"], {k: Platform(**v) for k, v in data["platforms"].items()})
    except (IndexError, ValueError, KeyError, TypeError):
        raise GraderError(f"could not ask JAX which devices this machine has (exit code {proc.returncode}):\n"
                          f"{proc.stderr[-2000:]}") from None
