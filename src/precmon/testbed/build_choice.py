"""Which llama.cpp to build on this machine: CUDA for its own GPU, or the CPU (docs/design.md §3).

One decision for `precmon demo`, `precmon ladder` and the test bed: where NVML sees an NVIDIA GPU
and a CUDA compiler is found (`testbed/cuda_probe.py`), llama.cpp is built with CUDA for that GPU's
architecture and served with every layer on it (`-ngl 99`); `--cpu` forces the CPU build; a GPU
without a usable compiler gets one line naming what is missing and how to install it, then the CPU
build, with a warning that the GPU's watts are not the inference's (on screen here; in the results
the `gpu-unused:` warning, raised wherever a variant's compute path is a CPU while NVML sees a GPU:
measure/labels/build_facts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from precmon.testbed.cuda_probe import CudaCompiler, GpuSeen, find_nvcc, nvidia_gpu, sm_key, too_old

CPU, CUDA = "cpu", "cuda"
#: How to get a CUDA compiler on DGX OS / Ubuntu: NVIDIA's toolkit package (DGX OS carries NVIDIA's
#: repository; Ubuntu's own nvidia-cuda-toolkit is CUDA 12.0, too old for Blackwell), then its bin
#: folder on PATH.
INSTALL_NVCC = (
    "sudo apt-get install -y cuda-toolkit (NVIDIA's CUDA repository: on DGX OS already set up, on Ubuntu "
    "https://developer.nvidia.com/cuda-downloads), then export PATH=/usr/local/cuda/bin:$PATH"
)
#: Every layer on the GPU: llama-server's `-ngl` takes a count, and 99 is above any model's.
GPU_LAYERS = ("-ngl", "99")


@dataclass(frozen=True)
class BuildChoice:
    """The build for this machine and why.

    Attributes:
        flavour: CPU or CUDA.
        gpu: the NVIDIA GPUs NVML sees (also for a CPU choice: their watts are then not the
            inference's); None without one.
        nvcc: the CUDA compiler a CUDA build uses.
        why: one line, why this flavour.
        missing: a GPU precmon cannot build for: what is missing and how to install it.
    """

    flavour: str
    gpu: GpuSeen | None = None
    nvcc: CudaCompiler | None = None
    why: str = ""
    missing: str | None = None

    @property
    def sm(self) -> str | None:
        """The cache key's architecture part of a CUDA build ("sm121"); None for the CPU or where
        NVML did not say the GPU's compute capability (CMake's "native" then decides)."""
        if self.flavour != CUDA or self.gpu is None or not self.gpu.capabilities:
            return None
        return sm_key(self.gpu.capabilities)

    @property
    def gpu_unused(self) -> bool:
        return self.gpu is not None and self.flavour == CPU

    def server_args(self) -> list[str]:
        """llama-server's flags for this build: every layer on the GPU for CUDA, none for the CPU."""
        return list(GPU_LAYERS) if self.flavour == CUDA else []

    def words(self) -> str:
        """`CUDA for NVIDIA H200 (SM 9.0)`, `CPU`."""
        return f"CUDA for {self.gpu.words()}" if self.flavour == CUDA and self.gpu else self.flavour.upper()

    def lines(self) -> list[str]:
        """What to say before building or serving: the choice, what is missing, the warning."""
        out = [f"llama.cpp build: {self.words()} ({self.why})"]
        if self.missing:
            out.append(self.missing)
        if self.gpu_unused and self.gpu is not None:
            out.append(
                f"warning: the inference runs on the CPU while {self.gpu.words()} sits idle: the GPU's watts in "
                "the results are its idle draw, not the inference's (gpu-unused: in each variant's warnings)"
            )
        return out


def choose_build(
    force_cpu: bool = False,
    gpu_probe: Callable[[], tuple[GpuSeen | None, str]] = nvidia_gpu,
    nvcc_probe: Callable[[], tuple[CudaCompiler | None, list[str]]] = find_nvcc,
) -> BuildChoice:
    """The build for this machine (the probes are NVML and the compiler search; tests fake them)."""
    gpu, why_none = gpu_probe()
    if force_cpu:
        return BuildChoice(CPU, gpu, why="--cpu")
    if gpu is None:
        return BuildChoice(CPU, None, why=f"no NVIDIA GPU: {why_none}")
    nvcc, looked = nvcc_probe()
    if nvcc is None:
        missing = (
            f"{gpu.words()} found, but no CUDA compiler: nvcc is in none of {', '.join(looked)}; "
            f"to build for the GPU: {INSTALL_NVCC}; running on the CPU meanwhile"
        )
        return BuildChoice(CPU, gpu, why="no CUDA compiler", missing=missing)
    old = too_old(nvcc, gpu.capabilities)
    if old is not None:
        missing = f"{old} ({nvcc.path}); to build for the GPU: {INSTALL_NVCC}; running on the CPU meanwhile"
        return BuildChoice(CPU, gpu, nvcc, why="the CUDA compiler is too old for this GPU", missing=missing)
    return BuildChoice(CUDA, gpu, nvcc, why=f"NVML sees it; {nvcc.words()}")


def cpu_choice(why: str = "--cpu") -> BuildChoice:
    """The CPU build without asking the GPU (the tests' and the benchmarks' CPU test bed)."""
    return BuildChoice(CPU, None, why=why)
