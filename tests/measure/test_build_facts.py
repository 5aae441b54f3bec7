"""How the server's binary was built (`compute_path.build`, from precmon-build.json beside it) and
`gpu-unused:` where the model ran on a CPU while NVML sees a GPU (measure/labels/build_facts.py),
through the sweep's compute-path step (sweep/execute.py) with a GB10-shaped NVML behind the meter."""

from __future__ import annotations

import json
from pathlib import Path

from precmon.core.schema import ServerInfo, VariantResult
from precmon.measure.labels.build_facts import (
    BUILD_RECORD,
    GPU_UNUSED_CODE,
    binary_path,
    gpu_unused_warning,
    read_build_record,
)
from precmon.power.nvml import open_nvml
from precmon.sweep.execute import _compute_path
from tests.fakes.nvml import gb10

CPU_LOG = "llama threadpool init\nload_model: loading model '/m/smollm2-Q8_0.gguf'\nsystem_info: n_threads = 2 | CPU : AVX2 = 1 |\n"
CUDA_LOG = (
    "ggml_cuda_init: found 1 CUDA devices (Total VRAM: 122572 MiB):\n"
    "  Device 0: NVIDIA GB10, compute capability 12.1, VMM: yes, VRAM: 122572 MiB\n"
    "load_tensors: offloaded 31/31 layers to GPU\n"
)


def binary_with_record(tmp_path: Path, record: object) -> Path:
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    (binary.parent / BUILD_RECORD).write_text(json.dumps(record))
    return binary


def variant(tmp_path: Path, log: str) -> tuple[VariantResult, Path]:
    path = tmp_path / "server.log"
    path.write_text(log)
    return VariantResult("Q8_0", "int8", None, ServerInfo(kind="llamacpp", url="http://127.0.0.1:1")), path


def test_a_cpu_run_beside_a_gb10_is_warned_and_the_build_recorded(tmp_path, monkeypatch):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 125000000 kB\nMemAvailable: 100000000 kB\n")
    monkeypatch.setenv("PRECMON_PROC_ROOT", str(tmp_path / "proc"))
    meter, _ = open_nvml(gb10())  # GB10: no memory info (meminfo instead), no power limit, SM 12.1
    binary = binary_with_record(tmp_path, {"built_by": "precmon", "flavour": "cpu", "isa": "sve2-1a2b3c4d"})
    result, log = variant(tmp_path, CPU_LOG)
    _compute_path(result, "llamacpp", log, meter, binary)
    path = result.compute_path
    assert path["backend"] == "CPU" and path["build"] == {
        "built_by": "precmon",
        "flavour": "cpu",
        "isa": "sve2-1a2b3c4d",
    }
    (warning,) = result.warnings
    assert warning.startswith(f"{GPU_UNUSED_CODE} the model ran on the CPU while NVML sees NVIDIA GB10")
    assert "not the inference's" in warning


def test_a_gpu_run_raises_nothing_and_a_cpu_without_a_gpu_neither(tmp_path):
    meter, _ = open_nvml(gb10())
    binary = binary_with_record(tmp_path, {"flavour": "cuda", "cuda_architectures": "121a", "gpu_capabilities": "12.1"})
    result, log = variant(tmp_path, CUDA_LOG)
    _compute_path(result, "llamacpp", log, meter, binary)
    assert result.compute_path["build"]["cuda_architectures"] == "121a"
    assert result.compute_path["capability"] == "12.1" and result.warnings is None
    result, log = variant(tmp_path, CPU_LOG)
    _compute_path(result, "llamacpp", log, None, None)  # no NVML, no binary known
    assert "build" not in result.compute_path and result.warnings is None
    assert gpu_unused_warning("CPU", []) is None and gpu_unused_warning("CUDA", ["NVIDIA H200"]) is None


def test_a_build_record_is_read_bounded_and_escaped(tmp_path):
    hostile = binary_with_record(tmp_path / "a", {"flavour": "cpu\x1b[31m", "note": "x" * 5000, "evil": "y", "isa": 3})
    record = read_build_record(hostile)
    assert record is not None and set(record) == {"flavour", "note"}
    assert "\x1b" not in record["flavour"] and len(record["note"]) <= 301
    big = binary_with_record(tmp_path / "b", {"note": "z" * 20_000})
    assert read_build_record(big) is None
    listed = binary_with_record(tmp_path / "c", ["flavour", "cuda"])
    assert read_build_record(listed) is None and read_build_record(tmp_path / "nothing" / "llama-server") is None


def test_a_launch_argv0_names_its_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "llama-server").write_text("")
    (tmp_path / "llama-server").chmod(0o755)
    assert binary_path("llama-server") == tmp_path / "llama-server"
    assert binary_path("/opt/llama/bin/llama-server") == Path("/opt/llama/bin/llama-server")
    assert binary_path("no-such-server") is None and binary_path(None) is None


def test_a_cuda_demo_logged_at_the_default_verbosity_is_no_cpu_run(tmp_path):
    """A router's CUDA children at llama-server's default verbosity log only the lines every backend
    logs there: no compute path is read, and no gpu-unused: is raised on a GPU that did the work."""
    meter, _ = open_nvml(gb10())
    binary = binary_with_record(tmp_path, {"built_by": "precmon", "flavour": "cuda", "cuda_architectures": "121"})
    log = (
        "[54999] 0.00.023.020 I srv    load_model: loading model '/m/smollm2-F16.gguf'\n[54999] \n"
        "[54999] 0.00.593.653 I cmn          init: llama threadpool init, n_threads = 16\n"
    )
    result, path = variant(tmp_path, log)
    _compute_path(result, "llamacpp", path, meter, binary)
    assert result.compute_path is not None
    assert (
        result.compute_path["reason"] == "the server's log does not name its backend (llama-server names it at -lv 4)"
    )
    assert not result.warnings
