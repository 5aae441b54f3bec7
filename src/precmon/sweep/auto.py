"""A sweep built from what a server lists: one variant per model, precision from its name.

Used by the TUI's `s` key when no sweep file was given, and by `precmon demo`.
"""

from __future__ import annotations

from precmon.core.precision import QUANT_FAMILY, family
from precmon.core.settings import BenchSettings
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from precmon.sweep.spec import SweepSpec, Variant

_ORDER = list(QUANT_FAMILY)


def precision_of(quant: str | None) -> str:
    """The precision tag of a listed model's quantization (`precmon.core.precision.family`)."""
    if not quant:
        return "unknown"
    return family(quant) or quant.lower()


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
