"""Which backend ran a llama.cpp server, read from its own log (docs/design.md §5 "True labels").

`ComputePath` is also what `servers/vllm_compute_path.py` reads from a vLLM server's log; vLLM adds
the kernels it chose (`KernelChoice`) and its own fallback statements.

llama-server says nothing about its backend over HTTP (`/props` has the build and the file type,
not the device); its log does, from ggml's own start-up lines:

    ggml_cuda_init: found 1 CUDA devices (Total VRAM: 143167 MiB):
      Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143167 MiB
    ggml_vulkan: Found 1 Vulkan devices:
    ggml_metal_init: found device: Apple M3 Max
    load_tensors: offloaded 33/33 layers to GPU

A log with llama.cpp's own lines (its threadpool, its model loading) and no GPU backend line is a
CPU run. A log that is missing or too short to tell gives None: the compute path is then n/a,
never guessed from the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_CUDA_DEVICE = re.compile(r"Device \d+: (?P<name>[^,\n]{1,80}), compute capability (?P<cc>\d{1,2}\.\d{1,2})")
_CUDA_FOUND = re.compile(r"ggml_cuda_init: found \d+ (?P<api>CUDA|ROCm|MUSA) devices")
_VULKAN = re.compile(r"ggml_vulkan: (?:Found \d+ Vulkan devices|\d+ = (?P<name>[^|\n]{1,80}))")
_METAL = re.compile(r"ggml_metal_(?:init|device_init): (?:found device|GPU name): *(?P<name>[^\n]{1,80})")
_OFFLOAD = re.compile(r"offloaded (?P<n>\d+)/(?P<of>\d+) layers to GPU")
#: Lines every llama.cpp server logs at start, whatever its backend: the log is one to read.
_LLAMA_LINES = ("llama threadpool init", "load_model: loading model", "llama_model_loader:", "system_info:")


#: The kinds of kernel an engine names (servers/vllm_compute_path.py classifies vLLM's).
NATIVE, WEIGHT_ONLY, EMULATION, FALLBACK, UNCLASSIFIED = (
    "native",
    "weight-only",
    "emulation",
    "fallback",
    "unclassified",
)


@dataclass(frozen=True)
class KernelChoice:
    """One kernel the engine said it chose: `kernel` for `used_for` (both as its log words them)."""

    kernel: str  # "CutlassFP8ScaledMMLinearKernel", "flashinfer-cutlass", "MARLIN"
    used_for: str  # "CompressedTensorsW8A8Fp8", "NVFP4 GEMM", "Mxfp4 MoE"
    kind: str = UNCLASSIFIED  # NATIVE, WEIGHT_ONLY (16-bit arithmetic), EMULATION, FALLBACK, UNCLASSIFIED

    def words(self) -> str:
        return f"{self.kernel} for {self.used_for}"


@dataclass(frozen=True)
class Fallback:
    """A fallback the engine itself announced: for `family` weights ("fp8", "fp4"; "" for its
    unquantized layers), of `kind` (WEIGHT_ONLY, EMULATION, FALLBACK), in precmon's words."""

    family: str
    kind: str
    words: str


@dataclass(frozen=True)
class ComputePath:
    """What ran the model: the backend, its device, the CUDA compute capability where one is;
    for vLLM also its version, its `quantization` setting, the kernels and fallbacks it named."""

    backend: str  # "CPU", "CUDA", "ROCm", "MUSA", "Vulkan", "Metal", "XPU", "TPU"
    device: str | None = None
    capability: str | None = None  # "9.0"
    offloaded: str | None = None  # "33/33" layers on the GPU, where the log says
    source: str = "the server's log"
    engine: str = "llama.cpp"  # or "vLLM"
    version: str | None = None
    quantization: str | None = None  # vLLM's `quantization=` ("fp8", "compressed-tensors")
    kernels: tuple[KernelChoice, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend, "source": self.source, "engine": self.engine}
        for key in ("device", "capability", "offloaded", "version", "quantization"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.kernels:
            out["kernels"] = [{"kernel": k.kernel, "for": k.used_for, "class": k.kind} for k in self.kernels]
        if self.fallbacks:
            out["fallbacks"] = [f.words for f in self.fallbacks]
        return out

    def words(self) -> str:
        """`CUDA (NVIDIA H200, SM 9.0)`, `CPU`."""
        detail = [d for d in (self.device, f"SM {self.capability}" if self.capability else None) if d]
        return f"{self.backend} ({', '.join(detail)})" if detail else self.backend


def from_llama_log(text: str) -> ComputePath | None:
    """The compute path a llama.cpp log names; None when the log cannot tell."""
    offload = _OFFLOAD.search(text)
    offloaded = f"{offload['n']}/{offload['of']}" if offload else None
    if offload is not None and offload["n"] == "0":
        return ComputePath("CPU", offloaded=offloaded, source="the server's log (0 layers offloaded)")
    found = _CUDA_FOUND.search(text)
    if found is not None:
        device = _CUDA_DEVICE.search(text)
        return ComputePath(
            found["api"],
            device["name"].strip() if device else None,
            device["cc"] if device and found["api"] == "CUDA" else None,
            offloaded,
        )
    vulkan = _VULKAN.search(text)
    if vulkan is not None:
        named = next((m["name"] for m in _VULKAN.finditer(text) if m["name"]), None)
        return ComputePath("Vulkan", named.strip() if named else None, offloaded=offloaded)
    metal = _METAL.search(text)
    if metal is not None:
        return ComputePath("Metal", metal["name"].strip(), offloaded=offloaded)
    if any(line in text for line in _LLAMA_LINES):
        return ComputePath("CPU", source="the server's log (no GPU backend started)")
    return None
