"""The concurrency curve of one variant: each level's figures over its repeats, their run-to-run
statistics, and which levels are on the Pareto front (docs/design.md §4 "Concurrency").

Per-user tok/s and TTFT describe users, so they pool the streams of every repeat (a level of 4
repeated 3 times is 12 users); total tok/s and J/token describe a window, so they are the median
of the repeats' windows. The statistics (`metrics_stats` keys `concurrency:<N>:<field>`, the
table's row keys) are over the repeats' own values, as for every other metric: the ± is
run-to-run noise. The report applies it to a file's runs as the bench does to its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from precmon.core import registry
from precmon.core.cells import stats_key
from precmon.core.concurrency import pareto_front
from precmon.core.metric_keys import KEY
from precmon.core.phases import CONCURRENCY
from precmon.core.schema import Run
from precmon.core.stats import describe, median, percentile

FIELDS = ("per_user_tok_s", "total_tok_s", "ttft_p50_s", "ttft_p99_s", "energy_j_per_token")


def _digits(field: str) -> int:
    return registry.digits(f"concurrency_{field}")


def _r(x: float | None, field: str) -> float | None:
    return None if x is None else round(x, _digits(field))


def by_level(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """The valid concurrency runs grouped by stream count ("4"), levels in ascending order."""
    out: dict[int, list[Run]] = {}
    for r in runs:
        if r.phase == CONCURRENCY and r.ok and r.extra.streams is not None:
            out.setdefault(r.extra.streams, []).append(r)
    return {str(n): out[n] for n in sorted(out)}


def level_figures(runs: Sequence[Run]) -> dict[str, Any]:
    """One level's entry of `metrics.concurrency` from its valid repeats."""
    extras = [r.extra for r in runs]
    rates = [x for e in extras for x in e.stream_decode_tok_s or []]
    ttfts = [x for e in extras for x in e.stream_ttft_s or []]
    return {
        "per_user_tok_s": _r(median(rates), "per_user_tok_s"),
        "per_user_tok_s_min": _r(min(rates, default=None), "per_user_tok_s"),
        "per_user_tok_s_max": _r(max(rates, default=None), "per_user_tok_s"),
        "total_tok_s": _r(median([e.total_tok_s for e in extras]), "total_tok_s"),
        "ttft_p50_s": _r(percentile(ttfts, 50), "ttft_p50_s"),
        "ttft_p99_s": _r(percentile(ttfts, 99), "ttft_p99_s"),
        "energy_j_per_token": _r(median([e.energy_j_per_token for e in extras]), "energy_j_per_token"),
        "repeats": len(runs),
        "streams_measured": len(rates),
    }


def curve(runs: Sequence[Run]) -> dict[str, dict[str, Any]]:
    """`metrics.concurrency`: {level: figures, with `pareto_front`} over the valid runs."""
    levels = {level: level_figures(group) for level, group in by_level(runs).items()}
    front = pareto_front(levels)
    for level, figures in levels.items():
        figures["pareto_front"] = level in front
    return levels


def curve_stats(runs: Sequence[Run]) -> dict[str, dict[str, Any]]:
    """`metrics_stats` entries `concurrency:<level>:<field>` over each level's repeats."""
    metric = {m.field: m for m in registry.metrics() if m.metrics_key == KEY.concurrency}
    out: dict[str, dict[str, Any]] = {}
    for level, group in by_level(runs).items():
        for field in FIELDS:
            st = describe([getattr(r.extra, field) for r in group], _digits(field))
            if st is not None:
                out[stats_key(metric[field], level)] = st
    return out
