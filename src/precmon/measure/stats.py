"""Small statistics with no surprises: median, linear-interpolated percentiles, chunk gaps."""

from __future__ import annotations

import math
from collections.abc import Sequence


def median(values: Sequence[float | None]) -> float | None:
    return percentile(values, 50.0)


def percentile(values: Sequence[float | None], pct: float) -> float | None:
    """Percentile with linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(v for v in values if v is not None and not math.isnan(v))
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * pct / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def gaps_ms(times_s: Sequence[float]) -> list[float]:
    """Gaps between consecutive arrival times, in milliseconds."""
    return [(b - a) * 1000.0 for a, b in zip(times_s, times_s[1:], strict=False)]
