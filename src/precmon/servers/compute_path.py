"""Which backend ran a llama.cpp server, read from its own log (docs/design.md §8 "True labels").

`ComputePath` is also what `servers/vllm_compute_path.py` reads from a vLLM server's log; vLLM adds
the kernels it chose (`KernelChoice`) and its own fallback statements.

llama-server says nothing about its backend over HTTP (`/props` has the build and the file type,
not the device); its log does. llama-server 0c1e570 (the test bed's) logs at its default verbosity
the device each model is placed on, and at `-lv 4` the architectures its CUDA code was built for
(src/llama.cpp `llama_prepare_model_devices`, common/common.cpp `system_info`):

    llama_prepare_model_devices: using device CUDA0 (NVIDIA H200) (0000:00:06.0) - 142629 MiB free
    system_info: n_threads = 16 … | CUDA : ARCHS = 900 | USE_GRAPHS = 1 | …
    load_tensors: offloaded 31/31 layers to GPU
    resolve_fused_ops: Flash Attention not supported, set to disabled

(read from a real H200 run: tests/fakes/logs/llama-server-h200-nvfp4.log). Other builds and llama-bench print
ggml's own start-up lines, which name the CUDA compute capability too:

    ggml_cuda_init: found 1 CUDA devices (Total VRAM: 143167 MiB):
      Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143167 MiB
    ggml_vulkan: Found 1 Vulkan devices:
    ggml_metal_init: found device: Apple M3 Max

Where the log names a CUDA device but not its capability, `with_capability` takes it from the GPU's
own driver (NVML) when exactly that device is on this machine. A log with llama.cpp's own lines (its
threadpool, its model loading) and no GPU backend line is a CPU run. A log that is missing or too
short to tell gives None: the compute path is then n/a, never guessed from the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

_CUDA_DEVICE = re.compile(r"Device \d+: (?P<name>[^,\n]{1,80}), compute capability (?P<cc>\d{1,2}\.\d{1,2})")
_CUDA_FOUND = re.compile(r"ggml_cuda_init: found \d+ (?P<api>CUDA|ROCm|MUSA) devices")
_VULKAN = re.compile(r"ggml_vulkan: (?:Found \d+ Vulkan devices|\d+ = (?P<name>[^|\n]{1,80}))")
_METAL = re.compile(r"ggml_metal_(?:init|device_init): (?:found device|GPU name): *(?P<name>[^\n]{1,80})")
_OFFLOAD = re.compile(r"offloaded (?P<n>\d+)/(?P<of>\d+) layers to GPU")
_USING = re.compile(r"using device (?P<dev>[A-Za-z]{2,12})\d{1,3} \((?P<name>[^()\n]{1,80})\)")
_ARCHS = re.compile(r"\bCUDA : ARCHS = (?P<archs>[\d,;]{1,80})")
_FLASH = re.compile(r"Flash Attention (?P<how>not supported, set to disabled|enabled)")
#: ggml's device-name prefixes (ggml_backend_dev_name) → the backend's name.
_DEVICE_PREFIX = {"CUDA": "CUDA", "ROCm": "ROCm", "MUSA": "MUSA", "Vulkan": "Vulkan", "MTL": "Metal", "SYCL": "SYCL"}
#: Lines a llama.cpp server logs at start, whatever its backend, at the verbosity that also shows
#: its GPU backend's lines (`-lv 4`): with them and no GPU line, the server ran on the CPU. Lines it
#: logs at the default verbosity too ("llama threadpool init", "load_model: loading model") prove
#: nothing: a CUDA server's log at that verbosity names no backend either (a router's children too).
_LLAMA_LINES = ("llama_model_loader:", "system_info:", "load_tensors:")


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
    built_for: str | None = None  # the CUDA architectures the build holds code for: "9.0", "8.6, 12.0"
    flash_attention: str | None = None  # "on", "off (not supported here)", where the log says
    engine: str = "llama.cpp"  # or "vLLM"
    version: str | None = None
    quantization: str | None = None  # vLLM's `quantization=` ("fp8", "compressed-tensors")
    kernels: tuple[KernelChoice, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"backend": self.backend, "source": self.source, "engine": self.engine}
        for key in ("device", "capability", "offloaded", "built_for", "flash_attention", "version", "quantization"):
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


def _built_for(text: str) -> str | None:
    """`ARCHS = 900` (or `860;1200`; `__CUDA_ARCH_LIST__` counts 100 a major version) → "9.0"
    ("8.6, 12.0"): what the build's CUDA code targets."""
    found = _ARCHS.search(text)
    if found is None:
        return None
    archs = [int(a) for a in re.split(r"[,;]", found["archs"]) if a.isdigit() and 3 <= len(a) <= 4]
    return ", ".join(f"{a / 100:.1f}" for a in archs) or None


def _flash(text: str) -> str | None:
    found = _FLASH.search(text)
    if found is None:
        return None
    return "on" if found["how"] == "enabled" else "off (not supported here)"


def _gpu(text: str, offloaded: str | None) -> ComputePath | None:
    """The GPU backend a log names, from ggml's start-up lines or the device a model was placed on."""
    found = _CUDA_FOUND.search(text)
    if found is not None:
        device = _CUDA_DEVICE.search(text)
        return ComputePath(
            found["api"],
            device["name"].strip() if device else None,
            device["cc"] if device and found["api"] == "CUDA" else None,
            offloaded,
        )
    using = _USING.search(text)
    if using is not None and using["dev"] in _DEVICE_PREFIX:
        return ComputePath(_DEVICE_PREFIX[using["dev"]], using["name"].strip(), offloaded=offloaded)
    return None


def from_llama_log(text: str) -> ComputePath | None:
    """The compute path a llama.cpp log names; None when the log cannot tell."""
    offload = _OFFLOAD.search(text)
    offloaded = f"{offload['n']}/{offload['of']}" if offload else None
    if offload is not None and offload["n"] == "0":
        return ComputePath("CPU", offloaded=offloaded, source="the server's log (0 layers offloaded)")
    gpu = _gpu(text, offloaded)
    if gpu is not None:
        built_for = _built_for(text) if gpu.backend == "CUDA" else None
        return replace(gpu, built_for=built_for, flash_attention=_flash(text))
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


def with_capability(path: ComputePath | None, capabilities: dict[str, set[str]]) -> ComputePath | None:
    """A CUDA path whose log named the device but not its compute capability, completed from the
    driver's own reading (`capabilities`: NVML's GPU name → the capabilities of the GPUs of that
    name here). Left as it is when the name is not there or its GPUs differ."""
    if path is None or path.backend != "CUDA" or path.capability is not None or path.device is None:
        return path
    found = capabilities.get(path.device)
    if found is None or len(found) != 1:
        return path
    return replace(path, capability=next(iter(found)), source=f"{path.source}; its SM from NVML")
