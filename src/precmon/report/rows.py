"""Which rows the comparison table has, and where each reads its value and per-run series.

A `RowSpec` knows one metric: its label and unit, which direction is better, and two readers
over a variant dict of docs/design.md §5 — the median from `metrics` and the per-run values from `runs`
(only valid runs, `ok: true`). Sizes (prompt tokens, streams, context) come from every variant's
metrics plus the settings, so a size nobody could measure still shows as a row of "n/a".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from precmon.measure.results import decode_energy_per_token
from precmon.report.fmt import human_tokens, is_number, size_sort_key

Variant = dict[str, Any]


@dataclass(frozen=True)
class RowSpec:
    key: str
    label: str
    unit: str
    better: str  # "higher" | "lower"
    ratio_kind: str  # "speedup" | "change"
    value: Callable[[Variant], Any]
    series: Callable[[Variant], list[Any]]


def metrics_of(variant: Variant) -> dict[str, Any]:
    m = variant.get("metrics")
    return m if isinstance(m, dict) else {}


def _runs(variant: Variant, phase: str, size: str | None = None) -> list[dict[str, Any]]:
    out = []
    for run in variant.get("runs") or []:
        if not isinstance(run, dict) or run.get("phase") != phase or run.get("ok") is False:
            continue
        if size is not None:
            target = run.get("target_prompt_tokens", run.get("prompt_tokens"))
            if str(target) != size:
                continue
        out.append(run)
    return out


def _scalar(key: str) -> Callable[[Variant], Any]:
    return lambda v: metrics_of(v).get(key)


def _sized(key: str, size: str) -> Callable[[Variant], Any]:
    def read(v: Variant) -> Any:
        d = metrics_of(v).get(key)
        return d.get(size) if isinstance(d, dict) else None

    return read


def _run_field(phase: str, field: str, size: str | None = None) -> Callable[[Variant], list[Any]]:
    return lambda v: [r.get(field) for r in _runs(v, phase, size)]


def _power_series(phase: str) -> Callable[[Variant], list[Any]]:
    """Per-second watts through the phase's runs, where recorded (`extra.power_w_per_s`); else one
    value per run."""

    def read(v: Variant) -> list[Any]:
        runs = _runs(v, phase)
        per_s = [w for r in runs for w in ((r.get("extra") or {}).get("power_w_per_s") or [])]
        return per_s or [r.get("power_w") for r in runs]

    return read


def _idle_series(v: Variant) -> list[Any]:
    return list(((v.get("power_idle") or {}).get("power_w_per_s")) or [])


def _prefill_series(size: str) -> Callable[[Variant], list[Any]]:
    def read(v: Variant) -> list[Any]:
        out = []
        for r in _runs(v, "prefill", size):
            ms = r.get("prefill_ms_per_token")
            if (
                not is_number(ms)
                and is_number(r.get("ttft_s"))
                and is_number(r.get("prompt_tokens"))
                and r["prompt_tokens"] > 0
            ):
                ms = r["ttft_s"] * 1000.0 / r["prompt_tokens"]
            out.append(ms)
        return out

    return read


def _energy_series(v: Variant) -> list[Any]:
    """J/token of each decode run, as the metric counts it (a shape for the sparkline)."""
    return [
        decode_energy_per_token(r.get("energy_j"), r.get("output_tokens"), r.get("extra")) for r in _runs(v, "decode")
    ]


def _concurrency_series(level: str, field: str) -> Callable[[Variant], list[Any]]:
    def read(v: Variant) -> list[Any]:
        runs = [
            r
            for r in _runs(v, "concurrency")
            if str((r.get("extra") or {}).get("concurrency", r.get("concurrency"))) == level
        ]
        return [(r.get("extra") or {}).get(field, r.get(field)) for r in runs]

    return read


def _sizes(doc: dict[str, Any], key: str, settings_key: str | None = None) -> list[str]:
    sizes: set[str] = set()
    for v in doc.get("variants") or []:
        if isinstance(v, dict) and isinstance(metrics_of(v).get(key), dict):
            sizes.update(str(s) for s in metrics_of(v)[key])
    setting = (doc.get("settings") or {}).get(settings_key) if settings_key else None
    if isinstance(setting, list):
        sizes.update(str(s) for s in setting)
    elif is_number(setting):
        sizes.add(str(setting))
    return sorted(sizes, key=size_sort_key)


def row_specs(doc: dict[str, Any]) -> list[RowSpec]:
    """The rows of the comparison table for this document, in display order."""
    specs = [
        RowSpec(
            "decode_tok_s",
            "Decode",
            "tok/s",
            "higher",
            "speedup",
            _scalar("decode_tok_s"),
            _run_field("decode", "decode_tok_s"),
        )
    ]
    for size in _sizes(doc, "prefill_ms_per_token", "prefill_tokens"):
        specs.append(
            RowSpec(
                f"prefill_ms_per_token:{size}",
                f"Prefill ({human_tokens(size)} prompt)",
                "ms/token",
                "lower",
                "speedup",
                _sized("prefill_ms_per_token", size),
                _prefill_series(size),
            )
        )
    for size in _sizes(doc, "ttft_s", "ttft_tokens"):
        specs.append(
            RowSpec(
                f"ttft_s:{size}",
                f"TTFT ({human_tokens(size)} prompt)",
                "s",
                "lower",
                "speedup",
                _sized("ttft_s", size),
                _run_field("ttft", "ttft_s", size),
            )
        )
    specs += [
        RowSpec(
            "power_decode_w",
            "Power under decode",
            "W",
            "lower",
            "change",
            _scalar("power_decode_w"),
            _power_series("decode"),
        ),
        RowSpec(
            "power_prefill_w",
            "Power under prefill",
            "W",
            "lower",
            "change",
            _scalar("power_prefill_w"),
            _power_series("prefill"),
        ),
        RowSpec("power_idle_w", "Idle power", "W", "lower", "change", _scalar("power_idle_w"), _idle_series),
        RowSpec(
            "energy_decode_j_per_token",
            "Energy per token",
            "J/token",
            "lower",
            "change",
            _scalar("energy_decode_j_per_token"),
            _energy_series,
        ),
        RowSpec("memory_gb", "Memory", "GB", "lower", "change", _scalar("memory_gb"), lambda v: []),
    ]
    for level in _sizes(doc, "concurrency"):
        for field, label, unit, better in (
            ("aggregate_tok_s", "total", "tok/s", "higher"),
            ("per_stream_tok_s", "per stream", "tok/s", "higher"),
            ("ttft_s", "TTFT", "s", "lower"),
        ):

            def read(v: Variant, level: str = level, field: str = field) -> Any:
                d = _sized("concurrency", level)(v)
                return d.get(field) if isinstance(d, dict) else None

            streams = f"{level} stream{'' if level == '1' else 's'}"
            specs.append(
                RowSpec(
                    f"concurrency:{level}:{field}",
                    f"{streams}: {label}",
                    unit,
                    better,
                    "speedup",
                    read,
                    _concurrency_series(level, field),
                )
            )
    for ctx in _sizes(doc, "long_context_decode_tok_s"):
        specs.append(
            RowSpec(
                f"long_context_decode_tok_s:{ctx}",
                f"Decode at {human_tokens(ctx)} context",
                "tok/s",
                "higher",
                "speedup",
                _sized("long_context_decode_tok_s", ctx),
                _run_field("long_context_decode", "decode_tok_s", ctx),
            )
        )
    return specs
