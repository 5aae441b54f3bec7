"""Unicode block sparklines (▁▂▃▄▅▆▇█) for per-run and per-second series.

Used by the terminal table, the Markdown export and (through `Cell.series`) the TUI. Plain
strings, so they survive copy-paste into a forum post or a commit message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"


def _finite(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and not math.isfinite(value))


def _resample(values: Sequence[float | None], width: int) -> list[float | None]:
    """Average `values` into `width` equal buckets (None where a bucket holds no number)."""
    out: list[float | None] = []
    n = len(values)
    for i in range(width):
        start = i * n // width
        stop = max((i + 1) * n // width, start + 1)
        bucket = [v for v in values[start:stop] if _finite(v)]
        out.append(sum(bucket) / len(bucket) if bucket else None)  # type: ignore[arg-type]
    return out


def sparkline(
    values: Sequence[float | None], width: int | None = None, lo: float | None = None, hi: float | None = None
) -> str:
    """Render `values` as a line of block characters.

    Args:
        values: the series; `None` (or NaN) becomes a space, so gaps stay visible.
        width: at most this many characters; a longer series is averaged into buckets, a shorter
            one is not stretched (one character per value). `None` means one per value.
        lo: bottom of the scale (default: the series minimum). Pass a shared `lo`/`hi` to make
            several sparklines comparable side by side.
        hi: top of the scale (default: the series maximum).

    Returns:
        The sparkline, or "" for an empty series. A flat series is drawn at mid height.
    """
    series = list(values)
    if width is not None:
        if width <= 0:
            return ""
        if len(series) > width:
            series = _resample(series, width)
    numbers = [float(v) for v in series if _finite(v)]  # type: ignore[arg-type]
    if not numbers:
        return " " * len(series) if series else ""
    low = min(numbers) if lo is None else lo
    high = max(numbers) if hi is None else hi
    span = high - low
    top = len(BLOCKS) - 1
    chars = []
    for v in series:
        if not _finite(v):
            chars.append(" ")
            continue
        if span <= 0:
            chars.append(BLOCKS[top // 2])
            continue
        level = round((float(v) - low) / span * top)  # type: ignore[arg-type]
        chars.append(BLOCKS[min(max(level, 0), top)])
    return "".join(chars)
