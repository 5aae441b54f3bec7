"""The "decode vs depth" row: how much of its decode speed a variant keeps as the context fills.

One row after the `Decode @ dD` rows (report/rows.py): its value is decode tok/s at the deepest
depth measured ÷ at the shallowest, in percent ("40 tok/s at d4096, 25 at d32768" reads 62.5),
and its series is decode tok/s per depth in depth order, so the sparkline every renderer draws
under a cell (terminal, Markdown, HTML, the TUI's sweep table) is the curve itself. The HTML page
also draws it as a line chart (report/render/html/depthchart.py).
"""

from __future__ import annotations

from typing import Any

from precmon.core.cells import RowKey, size_order
from precmon.core.metric_keys import KEY
from precmon.core.schema import VariantResult
from precmon.report.fmt import is_number

DEPTH_CURVE_OF = KEY.decode_tok_s_at_depth
#: The row's key: the metric it is drawn from, marked "curve" (its `stats_key`, which no variant's
#: `metrics_stats` holds, reads "decode_tok_s_at_depth:curve").
CURVE_KEY = RowKey(DEPTH_CURVE_OF, sub="curve")
CURVE_UNIT = "% kept"


def depth_points(variant: VariantResult) -> list[tuple[int, float]]:
    """(depth, decode tok/s) of a variant, in depth order, where measured."""
    values = variant.metrics.get(DEPTH_CURVE_OF)
    if not isinstance(values, dict):
        return []
    points = [(k, v) for k, v in values.items() if str(k).isdigit() and is_number(v) and v > 0]
    return [(int(k), float(v)) for k, v in sorted(points, key=lambda kv: size_order(str(kv[0])))]


def curve_label(depths: list[str]) -> str:
    return f"Decode kept d{depths[0]}→d{depths[-1]}"


def curve_value(variant: VariantResult) -> Any:
    """Decode at the deepest depth ÷ at the shallowest, × 100 (None with fewer than two depths)."""
    points = depth_points(variant)
    if len(points) < 2:
        return None
    return round(points[-1][1] / points[0][1] * 100.0, 1)


def curve_series(variant: VariantResult) -> list[Any]:
    return [v for _, v in depth_points(variant)]
