"""What a variant's weights really are, and which kernels ran them (docs/design.md §8 "True labels").

A label says what a file was asked to be. Two facts say what ran:

- **weights**, from the GGUF header of the file the server loaded (`/props` `model_path`, read
  where the file is on this machine: a server on loopback or one precmon launched): the tensor-type
  mix and the effective bits per weight. SmolLM2's "Q4_K_M" is 52% Q5_0 by bytes (llama-quantize
  falls back where a 576-wide row does not fit a 256-block); an NVFP4 file made with
  `--tensor-type` overrides says Q8_0 unless its file type was written over.
- **compute path**, from the server's log (`servers/compute_path.py`): the backend and the GPU's
  compute capability, and from them the kernel class of FP4 weights. llama.cpp has native FP4
  matrix instructions only on CUDA compute capability 12.x (Blackwell consumer and GB10:
  `blackwell_mma_available` in ggml-cuda), compiled for it; everywhere else (an H200 is 9.0, a
  B200 10.0, every CPU) FP4 weights are unpacked to int8 values and multiplied with integer dot
  products. That is a fallback kernel: the speed measured is not FP4 hardware's, and precmon says
  so (`fallback-kernel:`). A vLLM server's log names the kernels themselves and vLLM's own
  fallbacks (`servers/vllm_compute_path.py`, judged in `measure/labels/vllm_kernel.py`).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from precmon.core import registry
from precmon.core.metric_keys import KEY
from precmon.core.precision import family
from precmon.core.schema import VariantResult
from precmon.core.warning_codes import FALLBACK_CODE
from precmon.measure.labels.checkpoint import read_checkpoint
from precmon.measure.labels.vllm_kernel import vllm_kernel_of, vllm_precision
from precmon.servers import kinds
from precmon.servers.compute_path import ComputePath, with_capability
from precmon.servers.gguf_weights import GGUFError, WeightMix, read_weights

FP4_TYPES = ("NVFP4", "MXFP4")
#: llama.cpp's native FP4 MMA: CUDA compute capability 12.0 up to (not incl.) Rubin's 13.0.
NATIVE_FP4_CC = (12.0, 13.0)
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
#: Why a server precmon did not start has no compute path, by kind: of the kinds whose log
#: precmon reads (each kind's record says whether and with what: servers/kinds.py).
NOT_LAUNCHED = {k.name: k.log_not_launched for k in kinds.KINDS if k.log_reader is not None}


def local_file(url: str, path: str | None, launched: bool) -> Path | None:
    """The server's model file (or checkpoint folder), when it is this machine's: a loopback
    server or a launched one."""
    if not path:
        return None
    host = (urlsplit(url).hostname or "").lower()
    if not (launched or host in LOOPBACK):
        return None
    p = Path(path)
    return p if p.is_file() or (p / "config.json").is_file() else None


def record_checkpoint(result: VariantResult, folder: Path) -> None:
    """`weights` of a safetensors checkpoint (measure/labels/checkpoint.py); a server-less precision
    (vLLM tells none) becomes the checkpoint's type."""
    weights = read_checkpoint(folder)
    if weights is None:
        return
    result.weights = weights
    main = weights.get("main_type")
    if isinstance(main, str) and result.precision is None:
        result.precision = main


def record_weights(result: VariantResult, path: Path, reported: str | None) -> WeightMix | None:
    """`weights` from the file's header, with a note where the file type is not what it holds.

    `reported`: the quantization the server named (its file type, or the file's name). A file
    whose weights are FP4 but whose type says otherwise takes the FP4 name as its precision (the
    one known way a GGUF's file type lies: llama.cpp has no file type for a dense MXFP4 model).
    """
    try:
        mix = read_weights(path)
    except (GGUFError, OSError) as exc:
        result.note(f"weights: {path.name} could not be read: {exc}")
        return None
    result.weights = {**mix.to_dict(), "shares": _shares(mix), "source": f"GGUF header of {path}"}
    result.metrics[KEY.weights_bits_per_weight] = round(
        mix.bits_per_weight, registry.digits(KEY.weights_bits_per_weight)
    )
    main = mix.main_type
    said = (reported or mix.file_type or "").upper()
    if main and said and main != said:
        holds = f"{_mix_words(mix)} ({mix.bits_per_weight:.2f} bpw)"
        result.note(f"weights: {said} by its name or file type; holds {holds}")
        if main in FP4_TYPES and family(said) != family(main) and result.precision in (None, reported):
            result.precision = main
    return mix


def _shares(mix: WeightMix) -> dict[str, float]:
    shares = {t.lower(): round(mix.share(t), 3) for t in mix.weight_bytes}
    return {t: s for t, s in sorted(shares.items(), key=lambda kv: -kv[1]) if s > 0}


def _mix_words(mix: WeightMix, most: int = 4) -> str:
    """`52% Q5_0, 31% Q8_0, 10% Q6_K, 8% Q4_K`: the weight bytes by type (norms left out)."""
    parts = [f"{s:.0%} {t.upper()}" for t, s in _shares(mix).items() if t.upper() not in ("F32", "F64")]
    return ", ".join(parts[:most])


def _builds_native_fp4(built_for: str) -> bool:
    """Whether any architecture of a build ("9.0", "8.6, 12.0") is one with native FP4."""
    try:
        return any(NATIVE_FP4_CC[0] <= float(a) < NATIVE_FP4_CC[1] for a in built_for.split(", "))
    except ValueError:
        return True  # unreadable: claim no fallback


def kernel_of(main_type: str | None, path: ComputePath) -> tuple[str, str | None]:
    """(the kernel class in words, a `fallback-kernel:` warning or None) for weights of
    `main_type` on `path`. Only FP4 weights have a fallback to name; others run the backend's
    own kernels for their type."""
    if main_type not in FP4_TYPES:
        return f"{path.backend} kernels for {main_type or 'its weights'}", None
    if path.backend == "CUDA" and path.capability is not None:
        cc = float(path.capability)
        native = NATIVE_FP4_CC[0] <= cc < NATIVE_FP4_CC[1]
        if native and (path.built_for is None or _builds_native_fp4(path.built_for)):
            return f"native {main_type} MMA (SM {path.capability}, a build for sm_120 or newer)", None
        why = (
            f"SM {path.capability} has FP4 instructions, but this build's CUDA code is for SM {path.built_for}"
            if native
            else f"SM {path.capability} has no FP4 instructions llama.cpp uses; native FP4 is SM 12.x"
        )
    elif path.backend == "CUDA" and path.built_for is not None and not _builds_native_fp4(path.built_for):
        why = f"this build's CUDA code is for SM {path.built_for}, without FP4 instructions; native FP4 is SM 12.x"
    elif path.backend == "CPU":
        why = "a CPU has no FP4 arithmetic"
    elif path.backend == "CUDA":
        unknown = "the log names neither the GPU's SM nor the build's architectures (`-lv 4` prints them)"
        return f"CUDA: whether {main_type} ran on FP4 instructions is not known: {unknown}", None
    else:
        return f"{path.backend}: precmon does not know this backend's {main_type} kernel", None
    words = f"{main_type} unpacked to int8 dot products ({why})"
    warning = (
        f"{FALLBACK_CODE} {main_type} weights ran through int8 dot products: {why}; the speed is not FP4 hardware's"
    )
    return words, warning


def record_compute_path(result: VariantResult, path: ComputePath | None, why_none: str) -> None:
    """`compute_path` (backend, device, kernel class) and the fallback warning where one applies;
    `why_none` says why there is no path (recorded as its reason)."""
    if path is None:
        result.compute_path = {"reason": why_none}
        return
    main = (result.weights or {}).get("main_type")
    main = main if isinstance(main, str) else None
    if path.engine == "vLLM":
        kernel, line = vllm_kernel_of(vllm_precision(path.quantization, main, result.precision), path)
        warning = f"{FALLBACK_CODE} {line}" if line else None
    else:
        kernel, warning = kernel_of(main, path)
    result.compute_path = {**path.to_dict(), "words": path.words(), "kernel": kernel}
    if warning is not None:
        result.warn(warning)


def record_log_compute_path(
    result: VariantResult,
    kind: str,
    text: str | None,
    log_path: Path | None,
    capabilities: dict[str, set[str]] | None = None,
) -> None:
    """`compute_path` from a server's log `text` (read from `log_path`; None when there was none
    or it could not be read), or the reason there is none: another kind's log, no log (precmon
    did not start the server), an unreadable one, or one that does not tell. `capabilities`
    (NVML's GPU name → SM) completes a CUDA device whose log did not name its SM."""
    read = kinds.capabilities(kind).log_reader_fn()
    if read is None:
        why = f"precmon reads the compute path from llama.cpp's and vLLM's logs; a {kind} server's is not read"
    elif text is None:
        why = NOT_LAUNCHED[kind] if log_path is None else f"cannot read {log_path}"
    else:
        why = "the server's log does not name its backend"
        quiet = kinds.capabilities(kind).kv_log  # a server that names it only at a higher log level
        if quiet is not None:
            why += f" ({quiet.programs[0]} names it at {' '.join(quiet.flags)})"
    path = read(text) if read is not None and text is not None else None
    record_compute_path(result, with_capability(path, capabilities or {}), why)
