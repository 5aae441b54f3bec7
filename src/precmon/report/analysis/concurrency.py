"""The report's "Concurrency" section: each variant's curve over the levels, Pareto front marked.

A serving choice trades what each user gets (per-user tok/s, TTFT) against what the machine
delivers (total tok/s) and what it costs (J/token). One row per variant and level; a level on
the Pareto front (docs/design.md §4 "Concurrency") is one no other level of the same variant
beats on per-user tok/s, total tok/s and J/token together. A level the server could not run at
once (`concurrency-queued:`) is marked, since its per-user figures measure a queue.

Files written before the curve existed have one run per level and the older field names
(`aggregate_tok_s`, `per_stream_tok_s`, `ttft_s`); they are read under the new names and their
front is worked out here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precmon.core import registry
from precmon.core.cells import size_order
from precmon.core.concurrency import capacity, pareto_front
from precmon.core.metric_keys import KEY
from precmon.core.phases import CONCURRENCY
from precmon.core.schema import ResultsDoc, VariantResult
from precmon.report.fmt import format_value, is_number

COLUMNS = (
    "Variant",
    "Streams",
    "Per user (tok/s)",
    "Total (tok/s)",
    "TTFT p50 (s)",
    "TTFT p99 (s)",
    "J/token",
    "Pareto front",
)
QUEUED_MARK = "queued"
FRONT_NOTE = (
    "Pareto front: no other level of the same variant has higher per-user and total tok/s and lower "
    "J/token together; per-user is the median over the streams (min–max); a queued level ran more "
    "streams than the server runs at once."
)


@dataclass(frozen=True)
class ConcurrencyRow:
    """One level of one variant, as text cells in `COLUMNS` order, and what it is."""

    label: str
    level: str
    cells: tuple[str, ...]
    on_front: bool
    queued: bool


def _fields(entry: Any) -> dict[str, Any]:
    """A level's figures under the registry's field names (older files: their legacy names)."""
    out: dict[str, Any] = {}
    if not isinstance(entry, dict):
        return out
    for m in registry.metrics():
        if m.metrics_key == KEY.concurrency:
            v = entry.get(m.field, entry.get(m.legacy_field) if m.legacy_field else None)
            out[m.field] = v if is_number(v) else None
    for k in ("per_user_tok_s_min", "per_user_tok_s_max"):
        out[k] = entry.get(k) if is_number(entry.get(k)) else None
    front = entry.get("pareto_front")
    out["pareto_front"] = front if isinstance(front, bool) else None
    return out


def _curve(levels: Any) -> dict[str, dict[str, Any]]:
    """The levels of a `metrics.concurrency` object (ascending) with their figures,
    `pareto_front` filled where the file does not record it."""
    if not isinstance(levels, dict):
        return {}
    out = {str(lv): _fields(levels[lv]) for lv in sorted(levels, key=lambda x: size_order(str(x)))}
    if any(f["pareto_front"] is None for f in out.values()):
        front = pareto_front(out)
        for lv, f in out.items():
            f["pareto_front"] = lv in front
    return out


def curve_of(variant: VariantResult) -> dict[str, dict[str, Any]]:
    """The variant's levels (ascending) with their figures, `pareto_front` filled where the file
    does not record it."""
    return _curve(variant.metrics.get(KEY.concurrency))


def pareto_levels(levels: Any) -> set[str]:
    """The levels of a `metrics.concurrency` object on the front (as recorded, else worked out)."""
    return {lv for lv, f in _curve(levels).items() if f["pareto_front"]}


def _queued_levels(variant: VariantResult) -> set[str]:
    """Levels whose runs ran more streams than the server ran at once (`extra.server_parallel`)."""
    out = set()
    for run in variant.runs:
        if run.phase != CONCURRENCY:
            continue
        streams, (cap, _) = run.extra.streams, capacity(run.extra.server_parallel)
        if streams is not None and cap is not None and streams > cap:
            out.add(str(streams))
    return out


def _per_user(f: dict[str, Any]) -> str:
    text = format_value(f["per_user_tok_s"])
    lo, hi = f["per_user_tok_s_min"], f["per_user_tok_s_max"]
    if lo is not None and hi is not None and lo != hi:
        text += f" ({format_value(lo)}–{format_value(hi)})"
    return text


def concurrency_rows(doc: ResultsDoc) -> tuple[ConcurrencyRow, ...]:
    """The section's rows, variants in file order, levels ascending; () when nothing was measured."""
    rows = []
    for v in doc.variants:
        label, queued = v.label, _queued_levels(v)
        for level, f in curve_of(v).items():
            mark = "yes" if f["pareto_front"] else "no"
            cells = (
                label,
                level + (f" ({QUEUED_MARK})" if level in queued else ""),
                _per_user(f),
                format_value(f["total_tok_s"]),
                format_value(f["ttft_p50_s"]),
                format_value(f["ttft_p99_s"]),
                format_value(f["energy_j_per_token"]),
                mark,
            )
            rows.append(ConcurrencyRow(label, level, cells, bool(f["pareto_front"]), level in queued))
    return tuple(rows)
