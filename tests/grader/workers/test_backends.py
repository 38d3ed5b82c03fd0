"""Backend selection, device subsets and "not run here" reasons, on a fake device inventory.

Nothing here needs an accelerator: the inventory JAX would report is injected. One test asks the
real probe, which on any machine sees at least the CPU.
"""

import os
import sys

import pytest

from grader.workers import backends
from grader.workers.backends import EMULATED, Inventory, Platform, resolve
from grader.errors import UsageError
from grader.layout import Layout
from grader.workers.worker import RunSettings
from conftest import ROOT, run_grade

CPU_ONLY = Inventory("0.10.2", {"cpu": Platform(1, "cpu")})
TWO_GPUS = Inventory("0.10.2", {"cuda": Platform(2, "NVIDIA H200"), "cpu": Platform(1, "cpu")})
FOUR_GPUS = Inventory("0.10.2", {"cuda": Platform(4, "NVIDIA H200"), "cpu": Platform(1, "cpu")})
TPU_V5E = Inventory("0.10.2", {"tpu": Platform(8, "TPU v5 lite"), "cpu": Platform(1, "cpu")})
# What an accelerator worker multiplies at: float32's own precision, not the TPU's bfloat16 passes or a GPU's TF32.
ACCURATE = {"JAX_DEFAULT_MATMUL_PRECISION": "highest"}
TPU_V3 = Inventory("0.10.2", {"tpu": Platform(8, "TPU v3", per_chip=2), "cpu": Platform(1, "cpu")})


def test_cpu_is_emulated_and_needs_no_probe(monkeypatch):
    monkeypatch.setattr(backends, "probe", lambda: pytest.fail("--backend cpu must not start a probe"))
    backend = resolve("cpu")
    assert backend is EMULATED and backend.emulated
    assert backend.unavailable(64) is None and backend.unavailable(8, processes=4) is None
    assert backend.worker_variables(8) == {}


def test_auto_prefers_an_accelerator_and_falls_back_to_cpu():
    assert resolve("auto", CPU_ONLY) is EMULATED
    gpu = resolve("auto", TWO_GPUS)
    assert (gpu.name, gpu.platform, gpu.kind, gpu.available) == ("gpu", "cuda", "NVIDIA H200", 2)
    tpu = resolve("auto", TPU_V5E)
    assert (tpu.name, tpu.kind, tpu.available) == ("tpu", "TPU v5 lite", 8)


def test_missing_backend_is_a_usage_error_naming_what_jax_sees():
    with pytest.raises(UsageError) as err:
        resolve("gpu", CPU_ONLY)
    assert "JAX sees no GPU on this machine, only cpu (1 x cpu)" in str(err.value)
    assert "pmap-course[cuda]" in str(err.value)
    with pytest.raises(UsageError, match="no TPU .* only cuda \\(2 x NVIDIA H200\\), cpu"):
        resolve("tpu", TWO_GPUS)


def test_counts_beyond_the_machine_are_not_run_here():
    gpu = resolve("gpu", TWO_GPUS)
    assert gpu.unavailable(1) is None and gpu.unavailable(2) is None
    assert gpu.unavailable(8) == "needs 8 devices, this machine has 2"
    assert gpu.unavailable(2, processes=2) == "needs 4 devices, this machine has 2"
    assert gpu.unavailable(1, processes=2) is None


def test_auto_runs_what_the_accelerators_cannot_take_on_emulated_cpu_devices():
    auto, gpu = resolve("auto", TWO_GPUS), resolve("gpu", TWO_GPUS)
    assert auto.fallback and not gpu.fallback
    assert auto.placed(1) is auto and auto.placed(2) is auto and auto.placed(1, processes=2) is auto
    assert auto.placed(4) is EMULATED and auto.placed(2, processes=2) is EMULATED
    assert auto.unavailable(8) is None and auto.unavailable(2, processes=4) is None  # nothing is "not run here"
    assert auto.refuses(8) == "needs 8 devices, this machine has 2"
    assert gpu.placed(8) is gpu and gpu.unavailable(8) == "needs 8 devices, this machine has 2"  # today's meaning


def test_a_layouts_workers_get_the_settings_of_the_backend_it_is_placed_on():
    auto = resolve("auto", TWO_GPUS)
    run = RunSettings(code="c", probes="p", backend=auto, memory_mb=0, timeout_s=5)
    assert run.for_layout(Layout(2)) is run and run.for_layout(Layout(1, 2)) is run
    emulated = run.for_layout(Layout(4))
    assert emulated.backend is EMULATED and emulated == RunSettings(code="c", probes="p", backend=EMULATED, memory_mb=0,
                                                                      timeout_s=5)
    gpu_only = RunSettings(code="c", probes="p", backend=resolve("gpu", TWO_GPUS), memory_mb=0, timeout_s=5)
    assert gpu_only.for_layout(Layout(4)) is gpu_only  # --backend gpu: the case is not run here, not moved


@pytest.fixture
def no_tcp(monkeypatch):
    """A machine whose sandbox has no network stack: every AF_INET socket is refused (the lent TPU machine)."""
    def refused(*args, **kwargs):
        raise OSError(97, "Address family not supported by protocol")

    backends.no_localhost_tcp.cache_clear()
    monkeypatch.setattr(backends.socket, "socket", refused)
    yield
    backends.no_localhost_tcp.cache_clear()


def test_without_localhost_tcp_multi_process_layouts_are_not_run_here_on_every_backend(no_tcp):
    said = ("multi-process layouts need a TCP port on localhost, which this machine does not give (Address family "
            "not supported by protocol)")
    for backend in (EMULATED, resolve("auto", TPU_V5E), resolve("auto", TWO_GPUS), resolve("gpu", TWO_GPUS)):
        assert backend.unavailable(2, processes=2) == said  # not the reference's "result could not be checked"
        assert backend.unavailable(2) is None and backend.unavailable(1, processes=None) is None


def test_auto_on_a_tpu_runs_odd_chip_counts_and_process_layouts_emulated():
    tpu = resolve("auto", TPU_V3)
    assert tpu.placed(2) is tpu and tpu.placed(8) is tpu
    assert tpu.placed(3) is EMULATED and tpu.placed(2, processes=2) is EMULATED and tpu.placed(16) is EMULATED
    assert resolve("tpu", TPU_V3).placed(3).name == "tpu"


def test_gpu_workers_get_their_own_subset(monkeypatch):
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    gpu = resolve("gpu", FOUR_GPUS, environ={})
    assert gpu.worker_variables(2) == {"JAX_PLATFORMS": "cuda", "CUDA_VISIBLE_DEVICES": "0,1",
                                       "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **ACCURATE}
    assert gpu.worker_variables(2, process=1)["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert gpu.worker_variables(1, process=3)["CUDA_VISIBLE_DEVICES"] == "3"
    assert not gpu.exclusive


def test_subsets_stay_inside_the_graders_own_visible_devices():
    gpu = resolve("gpu", TWO_GPUS, environ={"CUDA_VISIBLE_DEVICES": "5,7"})
    assert gpu.worker_variables(1, process=1)["CUDA_VISIBLE_DEVICES"] == "7"
    assert gpu.worker_variables(2)["CUDA_VISIBLE_DEVICES"] == "5,7"


def test_tpu_workers_get_whole_chips_one_configuration_at_a_time():
    tpu = resolve("tpu", TPU_V5E, environ={})
    assert tpu.exclusive
    env = tpu.worker_variables(4)
    assert (env["TPU_VISIBLE_CHIPS"], env["TPU_CHIPS_PER_PROCESS_BOUNDS"], env["TPU_PROCESS_BOUNDS"]) == \
        ("0,1,2,3", "2,2,1", "1,1,1")
    assert tpu.worker_variables(8) == {"JAX_PLATFORMS": "tpu", **ACCURATE}
    assert "not 3 devices" in tpu.unavailable(3)
    assert tpu.unavailable(2, processes=2) == "multi-process layouts run on the cpu and gpu backends"
    v3 = resolve("tpu", TPU_V3, environ={})
    assert v3.worker_variables(4)["TPU_VISIBLE_CHIPS"] == "0,1"
    assert v3.unavailable(1) is not None and v3.unavailable(2) is None


# A one-chip slice of a TPU VM as this project's lent machine showed it: its one chip is chip 3 of the host, and
# libtpu learns the topology from the environment, not from a metadata server it cannot reach.
ONE_CHIP = Inventory("0.10.2", {"tpu": Platform(1, "TPU v5 lite"), "cpu": Platform(1, "cpu")})
TPU_VM = {"TPU_TOPOLOGY": "2x2", "TPU_SKIP_MDS_QUERY": "true", "TPU_ACCELERATOR_TYPE": "v5litepod-4",
          "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1", "TPU_WORKER_HOSTNAMES": "localhost", "LIBTPU_INIT_ARGS": "--x",
          "LD_LIBRARY_PATH": "/opt/lib", "HOSTNAME": "runsc", "XLA_FLAGS": "--graders-own"}


def test_tpu_workers_keep_the_vms_tpu_settings_and_the_whole_machine_names_no_chip(monkeypatch):
    for name, value in TPU_VM.items():
        monkeypatch.setenv(name, value)
    one = resolve("tpu", ONE_CHIP, environ={})
    vm = {k: v for k, v in TPU_VM.items() if k.startswith(("TPU_", "LIBTPU_", "LD_"))}
    assert one.worker_variables(1) == {"JAX_PLATFORMS": "tpu", **ACCURATE, **vm}  # no TPU_VISIBLE_CHIPS=0: it is chip 3
    assert one.refuses(2) == "needs 2 devices, this machine has 1"
    four = resolve("tpu", TPU_V5E, environ={}).worker_variables(4)
    assert four["TPU_VISIBLE_CHIPS"] == "0,1,2,3" and four["TPU_TOPOLOGY"] == "2x2"  # its own share wins
    assert EMULATED.worker_variables(1) == {}  # an emulated worker of --backend auto gets none of them


FAKE_JAX = """
import os
__version__ = "0.10.2"

class _Device:
    device_kind, platform = "TPU v5 lite", "tpu"

def devices(name=None):
    if name == "tpu" and os.environ.get("TPU_SKIP_MDS_QUERY") == "true":  # else libtpu would wait for a metadata server
        return [_Device()]
    raise RuntimeError(f"Unknown backend {name}")
"""


def test_the_probe_finds_a_jax_that_only_pythonpath_names_and_gives_it_the_tpu_settings(tmp_path, monkeypatch):
    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text(FAKE_JAX)
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{ROOT}")  # the checkout itself is never passed on
    monkeypatch.setenv("TPU_SKIP_MDS_QUERY", "true")
    backends.probe.cache_clear()
    try:
        inventory = backends.probe()
    finally:
        backends.probe.cache_clear()
    assert inventory == Inventory("0.10.2", {"tpu": Platform(1, "TPU v5 lite")})
    assert resolve("auto", inventory).describe() == "TPU v5 lite, 1 on this machine"


def test_memory_limit_applies_to_cpu_workers_only():
    assert EMULATED.memory_limit_mb(4096) == 4096
    assert resolve("gpu", TWO_GPUS).memory_limit_mb(4096) == 0


def test_probe_learns_the_devices_without_importing_jax_here():
    backends.probe.cache_clear()
    inventory = backends.probe()
    assert inventory.platforms["cpu"].count >= 1
    assert inventory.jax_version.startswith("0.")
    assert "jax" not in sys.modules
    assert backends.probe() is inventory  # asked once per grading process


def test_cli_refuses_a_missing_backend_with_exit_2():
    if "tpu" in backends.probe().platforms:
        pytest.skip("this machine has a TPU")
    proc = run_grade("exercise7", "--backend", "tpu", "--task", "dot")
    assert proc.returncode == 2, proc.stderr
    assert "error: --backend tpu: JAX sees no TPU on this machine, only cpu" in proc.stderr
    assert proc.stdout == ""


def test_batch_refuses_a_missing_backend_before_grading_anyone(tmp_path):
    if "tpu" in backends.probe().platforms:
        pytest.skip("this machine has a TPU")
    (tmp_path / "class" / "ann").mkdir(parents=True)
    proc = run_grade("batch", str(tmp_path / "class"), "--exercise", "exercise7", "--backend", "tpu",
                     "--gradebook", str(tmp_path / "g.sqlite"))
    assert proc.returncode == 2, proc.stderr
    assert "error: --backend tpu: JAX sees no TPU on this machine" in proc.stderr
    assert not (tmp_path / "g.sqlite").exists()


def test_the_first_workers_of_a_run_at_the_courses_own_counts_fit_a_one_chip_tpu(monkeypatch, tmp_path):
    """On the lent one-chip TPU, ``grade exercise7 --backend tpu`` (the course's counts 1, 2, 4 and 8) stopped with
    an internal KeyError: the zygote was prepared for every count, and 8 has no chip shape. A count the machine
    cannot take starts no worker; under --backend auto it starts an emulated one, with no TPU settings."""
    from grader.course import find_course
    from grader.grading.workspace import Workspace
    from grader.grading.zygote_first import environments, single_layouts

    for name, value in TPU_VM.items():
        monkeypatch.setenv(name, value)
    exercise = find_course(str(ROOT)).exercise("exercise7")
    tpu, auto = resolve("tpu", ONE_CHIP, environ={}), resolve("auto", ONE_CHIP, environ={})
    assert single_layouts(exercise, None, tpu) == [Layout(1)]
    assert single_layouts(exercise, None, auto) == [Layout(n) for n in (1, 2, 4, 8)]
    space = Workspace()
    try:
        on_tpu = environments(space, exercise, None, tpu, None)
        mixed = environments(space, exercise, None, auto, None)
    finally:
        space.close()
    assert [env.get("JAX_PLATFORMS") for env in on_tpu] == ["tpu"]
    assert [env.get("JAX_PLATFORMS") for env in mixed][0] == "tpu"
    assert not any(k.startswith("TPU_") for env in mixed[1:] for k in env)
