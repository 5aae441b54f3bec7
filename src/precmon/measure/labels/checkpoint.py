"""What a safetensors checkpoint's weights are, from its `config.json` (vLLM, SGLang; docs/design.md
§8 "True labels").

vLLM says nothing about a model's precision over HTTP; its `/v1/models` `root` names the
checkpoint it loaded, and a checkpoint on this machine says in `quantization_config` how its
weights are stored: ModelOpt's NVFP4 (`quant_method: modelopt`, `quant_algo: NVFP4`),
compressed-tensors (`format: nvfp4-pack-quantized`, `float-quantized` FP8, `int-quantized` W8A8,
`pack-quantized` W4A16), AWQ/GPTQ (`bits`), `fp8`, `mxfp4`; without one, `torch_dtype`. Files
are untrusted: any field of the wrong type reads as unknown, never as a guess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_CONFIG_BYTES = 1 << 20
_DTYPES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32", "half": "F16"}


def _weights_bits(qc: dict[str, Any]) -> tuple[int | None, str | None]:
    """(bits, "int" | "float") of compressed-tensors' first config group's weights."""
    groups = qc.get("config_groups")
    if not isinstance(groups, dict):
        return None, None
    for group in groups.values():
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict):
            bits, kind = w.get("num_bits"), w.get("type")
            return (bits if isinstance(bits, int) and not isinstance(bits, bool) else None), (
                kind if isinstance(kind, str) else None
            )
    return None, None


def main_type_of(config: dict[str, Any]) -> tuple[str | None, str]:
    """(the weights' type — NVFP4, MXFP4, FP8, INT8, INT4, BF16, F16 — or None, how it was told)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, dict):
        dtype = config.get("torch_dtype", config.get("dtype"))
        return (_DTYPES.get(dtype) if isinstance(dtype, str) else None), "torch_dtype (no quantization_config)"
    method = str(qc.get("quant_method") or "").lower()
    fmt = str(qc.get("format") or "").lower()
    algo = str(qc.get("quant_algo") or "").upper()
    if "nvfp4" in fmt or algo == "NVFP4" or method == "modelopt_fp4":
        return "NVFP4", f"quantization_config {method} {fmt or algo}".strip()
    if "mxfp4" in (method, fmt) or "mxfp4" in fmt:
        return "MXFP4", f"quantization_config {method}"
    if method == "fp8" or algo == "FP8" or fmt == "float-quantized":
        return "FP8", f"quantization_config {method} {fmt or algo}".strip()
    if method == "compressed-tensors":
        bits, kind = _weights_bits(qc)
        if bits in (4, 8) and kind in ("int", None):
            return f"INT{bits}", f"quantization_config compressed-tensors {fmt} ({bits}-bit weights)"
        return None, f"quantization_config compressed-tensors {fmt}: weights not understood"
    bits = qc.get("bits", qc.get("w_bit"))
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin") and isinstance(bits, int) and bits in (2, 3, 4, 8):
        return f"INT{bits}", f"quantization_config {method} ({bits}-bit weights)"
    return None, f"quantization_config {method or '?'}: not understood"


def read_checkpoint(folder: Path) -> dict[str, Any] | None:
    """The `weights` object of a checkpoint folder (main_type, told_by, source), None where the
    folder has no readable config.json."""
    path = folder / "config.json"
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    main, told = main_type_of(data)
    return {"main_type": main, "told_by": told, "source": f"config.json of {folder}"}
