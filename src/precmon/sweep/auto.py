"""A sweep built from what a server lists: one variant per model, precision from its name.

Used by the TUI's `s` key when no sweep file was given, and by `precmon demo`.
"""

from __future__ import annotations

from precmon.measure.bench import BenchSettings
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from precmon.sweep.spec import SweepSpec, Variant

# Quantization names → the precision families of docs/design.md §1, widest first.
PRECISION_OF = {
    "F32": "fp32",
    "F16": "fp16",
    "BF16": "bf16",
    "Q8_0": "int8",
    "FP8": "fp8",
    "Q6_K": "int6",
    "Q5_K_M": "int5",
    "Q5_K_S": "int5",
    "Q5_0": "int5",
    "Q4_K_M": "int4",
    "Q4_K_S": "int4",
    "Q4_0": "int4",
    "MXFP4": "fp4",
    "NVFP4": "nvfp4",
    "AWQ": "int4",
    "GPTQ": "int4",
}
_ORDER = list(PRECISION_OF)


def precision_of(quant: str | None) -> str:
    if not quant:
        return "unknown"
    return PRECISION_OF.get(quant.upper(), quant.lower())


def spec_from_server(
    url: str,
    kind: str = "auto",
    settings: BenchSettings | None = None,
    api_key: str | None = None,
    cooldown_s: float = 10.0,
) -> SweepSpec:
    """One variant per model the server lists, widest precision first (the baseline)."""
    server = make_server(url, kind=kind, api_key=api_key)
    try:
        models = server.list_models()
    finally:
        server.close()
    if not models:
        raise ServerError(f"{url}: the server lists no models to sweep")
    settings = settings or BenchSettings()

    def rank(m) -> tuple[int, str]:
        q = (m.quantization or "").upper()
        return (_ORDER.index(q) if q in _ORDER else len(_ORDER), m.name)

    variants = [
        Variant(
            label=m.quantization or m.name,
            precision=precision_of(m.quantization),
            url=url,
            model=m.name,
            server=server.kind,
            settings=settings,
        )
        for m in sorted(models, key=rank)
    ]
    seen: dict[str, int] = {}
    for v in variants:  # two models with the same quantization: keep labels unique
        seen[v.label] = seen.get(v.label, 0) + 1
        if seen[v.label] > 1:
            v.label = f"{v.label} ({v.model})"
    return SweepSpec(path=None, variants=variants, cooldown_s=cooldown_s, settings=settings)
