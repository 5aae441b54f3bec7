"""Whether a vLLM server ran FP8 or FP4 weights on their own arithmetic (docs/design.md §8 "True
labels").

vLLM names the kernel it chose for each kind of layer, and says so itself when a GPU lacks the
weights' arithmetic (servers/vllm_compute_path.py reads both). A kernel that unpacks FP8 or FP4
weights to 16-bit arithmetic (Marlin, any W4A16/W8A16 kernel), emulates them, or is vLLM's own
fallback (the Torch FP8 kernels on a CPU without AMX-FP8) is a fallback kernel: the speed measured
is not FP8 or FP4 hardware's, and precmon says so (`fallback-kernel:`), as it does for llama.cpp.
Only FP8 and FP4 weights have such a fallback to name: INT4 weights through Marlin (W4A16) is how
INT4 runs, and BF16 on torch's linear is a library's fallback, shown but not warned about. A
kernel precmon cannot class is named and never warned about.
"""

from __future__ import annotations

from precmon.core.precision import family
from precmon.servers.compute_path import EMULATION, FALLBACK, NATIVE, WEIGHT_ONLY, ComputePath, KernelChoice

#: Weight families with a fallback to name, and the hardware their speed is not.
LOW_FAMILIES = {"fp8": "FP8", "fp4": "FP4", "nvfp4": "FP4", "mxfp4": "FP4"}
SHOWN_KERNELS = 3
_HOW = {
    WEIGHT_ONLY: "weight-only (16-bit arithmetic)",
    EMULATION: "in emulation (16-bit arithmetic)",
    FALLBACK: "on vLLM's fallback kernel",
}


def vllm_precision(quantization: str | None, main_type: str | None, declared: str | None) -> str | None:
    """The weights' precision for the kernel question: vLLM's own `quantization=` where it names
    a float format (`fp8` quantizes BF16 weights at load), else the checkpoint's main type, else
    the variant's declared precision."""
    fam = family(quantization)
    if fam in LOW_FAMILIES and quantization is not None:
        q = quantization.lower()
        return (
            "FP8" if fam == "fp8" else ("MXFP4" if "mx" in q else ("NVFP4" if "nv" in q or "modelopt" in q else "FP4"))
        )
    return main_type or declared


def _shown(kernels: tuple[KernelChoice, ...]) -> str:
    words = "; ".join(f"{k.words()} ({k.kind})" for k in kernels[:SHOWN_KERNELS])
    more = len(kernels) - SHOWN_KERNELS
    return words + (f"; {more} more" if more > 0 else "")


def vllm_kernel_of(precision: str | None, path: ComputePath) -> tuple[str, str | None]:
    """(the kernel class in words, the fallback in one line or None) for weights of `precision`
    on the kernels and fallbacks `path` (a vLLM log's) names; measure/labels/true_label.py puts
    `fallback-kernel:` before the line."""
    shown = _shown(path.kernels)
    library = "; ".join(f.words for f in path.fallbacks if not f.family)
    hardware = LOW_FAMILIES.get(family(precision) or "")
    if hardware is None or precision is None:
        words = shown or "vLLM's log names no quantized-layer kernel (unquantized layers run its default GEMM)"
        return (f"{words}; {library}" if library else words), None
    fam = "fp8" if hardware == "FP8" else "fp4"
    told = [f for f in path.fallbacks if f.family == fam]
    slow = [k for k in path.kernels if k.kind in _HOW]
    if told or slow:
        kind = told[0].kind if told else slow[0].kind
        why = "; ".join(f.words for f in told[:2]) if told else f"vLLM chose {slow[0].words()}"
        if not told and kind == FALLBACK and path.backend == "CPU":
            why += ", its fallback on a CPU without AMX-FP8"
        line = f"{precision} weights ran {_HOW[kind]}: {why}; the speed is not {hardware} hardware's"
        return f"{precision} {_HOW[kind]}: {shown or why}", line
    if any(k.kind == NATIVE for k in path.kernels):
        return f"native {precision}: {shown}", None
    if path.kernels:
        return f"{shown}: precmon does not know whether it multiplies in {hardware}", None
    return f"vLLM's log names no kernel for its {precision} layers", None
