"""Roofline context for decode: how close each variant runs to the memory-bandwidth limit.

Decode reads every weight once per token, so its ceiling is bandwidth ÷ bytes per token. The
fraction of that ceiling a variant reaches explains a result such as "Q4 decode only 1.3× F16":
when it is far from the limit, per-token overhead (kernel launches, dequantization, sampling,
HTTP) dominates and fewer bits cannot buy proportional speed.

Bytes per token are the model's weight bytes (`model_size_bytes` on the variant or in its
metrics; precmon itself never writes it); failing that `metrics.memory_gb`, which bench fills
from the model size the server reports and which may include buffers on some servers, so the
fraction is labelled an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc, VariantResult
from precmon.report.fmt import TIMES, is_number
from precmon.report.table import resolve_baseline

#: Peak memory bandwidth in GB/s from the vendors' data sheets, matched (lower-case substrings,
#: all must occur, none of `unless`) against host.gpus[].name. First match wins.
DEVICE_BANDWIDTH_GBS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], float], ...] = (
    ("NVIDIA H200", ("h200",), (), 4800.0),
    ("NVIDIA H100 PCIe", ("h100", "pcie"), (), 2000.0),
    ("NVIDIA H100 NVL", ("h100", "nvl"), (), 3900.0),
    ("NVIDIA H100 SXM", ("h100",), (), 3350.0),
    ("NVIDIA GeForce RTX 4090", ("4090",), ("laptop",), 1008.0),
    ("NVIDIA GB10 (DGX Spark)", ("gb10",), (), 273.0),
    ("NVIDIA GB10 (DGX Spark)", ("dgx spark",), (), 273.0),
    ("AMD Strix Halo", ("strix halo",), (), 256.0),
    ("AMD Strix Halo", ("8060s",), (), 256.0),
    ("AMD Strix Halo", ("ryzen ai max",), (), 256.0),
    ("NVIDIA Jetson AGX Orin", ("orin",), ("nx", "nano"), 204.8),
)

# Fractions of the bandwidth limit at which decode counts as bandwidth-bound / overhead-bound.
BANDWIDTH_BOUND_FRACTION = 0.6
OVERHEAD_BOUND_FRACTION = 0.3


def match_device(name: str) -> tuple[str, float] | None:
    """(device, GB/s) for a GPU name such as "NVIDIA GB10", or None when it is not in the table."""
    low = name.casefold()
    for device, needles, unless, gbs in DEVICE_BANDWIDTH_GBS:
        if all(n in low for n in needles) and not any(u in low for u in unless):
            return device, gbs
    return None


def model_bytes(variant: VariantResult) -> tuple[float, str] | None:
    """(bytes read per decoded token, where the number came from) or None."""
    metrics = variant.metrics
    for value in (variant.model_size_bytes, metrics.get("model_size_bytes")):
        if is_number(value) and value > 0:
            return float(value), "model size"
    mem = metrics.get(KEY.memory_gb)
    if is_number(mem) and mem > 0:
        return float(mem) * 1e9, "from memory_gb, an upper bound"
    return None


def verdict(fraction: float) -> str:
    """How to read a fraction of the bandwidth limit."""
    if fraction > 1.0:
        return (
            "above the memory-bandwidth limit: the weights fit in cache, or the bandwidth figure "
            "is too low; check --bandwidth-gbs"
        )
    if fraction >= BANDWIDTH_BOUND_FRACTION:
        return "bandwidth-bound: decode speed follows the bytes read"
    if fraction >= OVERHEAD_BOUND_FRACTION:
        return "partly bandwidth-bound"
    return "overhead-bound, not bandwidth-bound"


@dataclass(frozen=True)
class RooflineEntry:
    label: str
    bytes_per_token: float | None
    bytes_source: str | None
    decode_tok_s: float | None
    limit_tok_s: float | None  # bandwidth ÷ bytes per token
    fraction: float | None  # decode_tok_s ÷ limit_tok_s


@dataclass(frozen=True)
class Roofline:
    device: str | None
    bandwidth_gbs: float | None
    source: str  # "device table", "--bandwidth-gbs" or "unknown"
    entries: tuple[RooflineEntry, ...]
    summary: str

    def lines(self) -> list[str]:
        """Human lines: the device, one per variant, then the summary sentence."""
        out = []
        if self.bandwidth_gbs is None:
            out.append(
                f"Memory bandwidth of {self.device or 'this device'} is unknown (CPU or unlisted "
                "device); pass --bandwidth-gbs to see decode as a fraction of the bandwidth limit."
            )
        else:
            out.append(f"{self.device or 'device'}: {self.bandwidth_gbs:g} GB/s ({self.source}).")
        for e in self.entries:
            if e.fraction is not None and e.limit_tok_s is not None and e.bytes_per_token is not None:
                out.append(
                    f"{e.label}: {e.bytes_per_token / 1e9:.3g} GB/token ({e.bytes_source}) → limit "
                    f"{e.limit_tok_s:.1f} tok/s; measured {e.decode_tok_s:.1f} = {e.fraction:.0%} "
                    "of the limit" + ("" if e.fraction <= 1.0 else f" ({verdict(e.fraction)})") + "."
                )
        if self.summary:
            out.append(self.summary)
        return out


def _device(doc: ResultsDoc) -> tuple[str | None, float | None]:
    gpus = doc.host.gpus
    for g in gpus:
        hit = match_device(g.name or "")
        if hit:
            return hit
    return (str(gpus[0].name) if gpus else "CPU"), None


def _summary(entries: list[RooflineEntry], base: RooflineEntry | None) -> str:
    """One sentence on the smallest variant against the baseline."""
    if base is None or base.decode_tok_s is None or base.bytes_per_token is None:
        return ""
    others = [e for e in entries if e is not base and e.decode_tok_s and e.bytes_per_token]
    if not others:
        return ""
    small = min(others, key=lambda e: e.bytes_per_token or 0.0)
    speedup = (small.decode_tok_s or 0.0) / base.decode_tok_s
    shrink = base.bytes_per_token / (small.bytes_per_token or 1.0)
    head = f"{small.label} decode is {speedup:.2f}{TIMES} {base.label} with {shrink:.1f}{TIMES} fewer bytes per token"
    if small.fraction is None:
        return head + "; the bandwidth limit is unknown, so whether that gap is overhead cannot be told."
    base_part = f" ({base.label}: {base.fraction:.0%})" if base.fraction is not None else ""
    tail = verdict(small.fraction)
    if small.fraction < OVERHEAD_BOUND_FRACTION:
        tail += " — per-token overhead, not weight reads, sets the speed, so fewer bits buy little"
    return f"{head}: {small.fraction:.0%} of the bandwidth limit{base_part} — {tail}."


def roofline(doc: ResultsDoc, bandwidth_gbs: float | None = None, baseline: str | None = None) -> Roofline:
    """Decode as a fraction of the memory-bandwidth limit for every variant of `doc`.

    Args:
        doc: results document (docs/design.md §5).
        bandwidth_gbs: override the device table (`--bandwidth-gbs`), in GB/s.
        baseline: the label the summary compares against (default as in the table).
    """
    device, gbs = _device(doc)
    source = "device table" if gbs is not None else "unknown"
    if bandwidth_gbs is not None and bandwidth_gbs > 0:
        gbs, source = float(bandwidth_gbs), "--bandwidth-gbs"
    variants = doc.variants
    entries = []
    for v in variants:
        mb = model_bytes(v)
        tok = v.metrics.get(KEY.decode_tok_s)
        tok = float(tok) if is_number(tok) and tok > 0 else None
        limit = gbs * 1e9 / mb[0] if gbs is not None and mb else None
        frac = tok / limit if tok is not None and limit else None
        entries.append(RooflineEntry(v.label, mb[0] if mb else None, mb[1] if mb else None, tok, limit, frac))
    base_i = resolve_baseline(variants, baseline)
    base = entries[base_i] if base_i is not None else None
    return Roofline(device, gbs, source, tuple(entries), _summary(entries, base))
