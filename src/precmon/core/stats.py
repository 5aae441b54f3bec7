"""Small statistics with no surprises: median, linear-interpolated percentiles, and the run-to-run
statistics every headline metric carries (`metrics_stats`, its 95% intervals).

The bench writes `metrics_stats` with these functions and the report works them out with the same
ones for files that do not record them, so both live in the core (the `noisy:` warning that reads
them is measure/trust/validity.py's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from precmon.core import cells, phases, registry
from precmon.core.metric_keys import KEY
from precmon.core.schema import Run


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


# ---- run-to-run statistics of a headline metric (docs/design.md §8 `metrics_stats`) -----------
#
# The 95% CI is Student's t-interval for the mean of the runs: mean ± t(0.975, n−1)·s/√n.
# Why this and not the alternatives:
# - a distribution-free CI for the median (order statistics) cannot reach 95% below 6 runs: for
#   precmon's default of 3 repeats the widest one, [min, max], covers the median only 75% of the
#   time, and it moves in whole-run steps, so adaptive repeats could not aim at a width;
# - a bootstrap of 3-10 values resamples the same few numbers and comes out too narrow;
# - the t-interval is defined from n = 2, widens honestly at small n (t = 4.30 at n = 3, so three
#   runs give a wide interval unless they agree closely), shrinks as 1/√n, and an outlier
#   run widens it instead of hiding behind the median.
# It assumes roughly normal run-to-run noise around a steady value; the headline stays the median
# (robust to one bad run), and a median far from the interval's centre is itself a sign of noise.

# t quantiles (two-sided 95%) by degrees of freedom; beyond 30, interpolated in 1/df.
_T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980,
}  # fmt: skip
_Z975 = 1.960


#: Fewer valid runs: no 95% interval; the renderers say so (`report.fmt.too_few_for_interval`).
MIN_RUNS_FOR_CI = 3


def t975(df: int) -> float:
    """Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in _T975:
        return _T975[df]
    lo = max(k for k in _T975 if k < df)
    hi = min((k for k in _T975 if k > df), default=None)
    t_hi, inv_hi = (_Z975, 0.0) if hi is None else (_T975[hi], 1 / hi)  # df → ∞: the normal's 1.960
    f = (1 / lo - 1 / df) / (1 / lo - inv_hi)  # t approaches z linearly in 1/df
    return _T975[lo] + (t_hi - _T975[lo]) * f


def describe(values: Sequence[float | None], digits: int | None = None) -> dict[str, Any] | None:
    """n, median, mean, stdev (sample, n−1), cv (stdev ÷ mean) and the 95% t-interval of `values`.

    None and NaN are left out; None when nothing is left. With one value stdev, cv and ci95 are
    None (one run says nothing about the spread); with two, ci95 is None too (`MIN_RUNS_FOR_CI`:
    Student's t for one degree of freedom is 12.7, and such an interval says only that two runs
    were made). The interval of values that are all >= 0 (every measured quantity) is cut at 0:
    the true value cannot lie below it, so the cut loses no coverage. `digits` rounds median, mean, stdev and the
    interval (cv keeps 4 decimals).
    """
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return None
    n = len(xs)
    mean = sum(xs) / n
    stdev = cv = None
    ci: list[float] | None = None
    if n >= 2:
        stdev = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
        cv = stdev / abs(mean) if mean != 0 else None
    if stdev is not None and n >= MIN_RUNS_FOR_CI:
        half = t975(n - 1) * stdev / math.sqrt(n)
        low = mean - half
        ci = [max(0.0, low) if min(xs) >= 0 else low, mean + half]

    def rd(x: float | None) -> float | None:
        return x if x is None or digits is None else round(x, digits)

    return {
        "n": n,
        "median": rd(median(xs)),
        "mean": rd(mean),
        "stdev": rd(stdev),
        "cv": None if cv is None else round(cv, 4),
        "ci95": None if ci is None else [rd(ci[0]), rd(ci[1])],
    }


def half_width(stats: Mapping[str, Any] | None) -> float | None:
    """Half the width of `stats["ci95"]` (None without an interval)."""
    ci = (stats or {}).get("ci95")
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or not all(_finite(x) for x in ci):
        return None
    return (float(ci[1]) - float(ci[0])) / 2.0


def relative_half_width(stats: Mapping[str, Any] | None) -> float | None:
    """CI half-width ÷ |median| (what `--target-ci` compares), None when either is missing or 0."""
    hw, med = half_width(stats), (stats or {}).get("median")
    if hw is None or not _finite(med) or med == 0:
        return None
    return hw / abs(float(med))


def overlaps(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool | None:
    """Whether two 95% intervals overlap (the difference is inside the run-to-run noise); None when
    either has no interval."""
    if half_width(a) is None or half_width(b) is None:
        return None
    (alo, ahi), (blo, bhi) = (a or {})["ci95"], (b or {})["ci95"]
    return bool(alo <= bhi and blo <= ahi)


def _finite(x: Any) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _field(run: Run, name: str) -> float | None:
    v = getattr(run, name, None)
    return float(v) if _finite(v) else None


def decode_energy_per_token(run: Run) -> float | None:
    """J/token of one decode run: its energy ÷ the tokens decoded in its window.

    A window cut at the first token (`extra.energy_tokens`, see measure/decode_window.py's
    `cut_prefill`) holds the tokens after the first; an uncut one (older results, or no sampled
    watts) all output tokens.
    """
    tokens = run.extra.energy_tokens if run.extra.energy_tokens is not None else run.output_tokens
    if run.energy_j is None or tokens is None or tokens <= 0:
        return None
    return run.energy_j / tokens


def metrics_stats(runs: Sequence[Run]) -> dict[str, dict[str, Any]]:
    """`metrics_stats` of a variant (docs/design.md §5) from its runs.

    Covers every registry metric with `reduce="median"` (per size for sized ones, per depth and
    size for grid ones: the runs' cells and keys are core/cells.py's `run_place` and `stats_key`,
    "prefill_ms_per_token:4096", "prefill_ms_per_token_at_depth:4096:512", the comparison table's
    row keys; sizes in numeric order) and `energy_decode_j_per_token`,
    over the valid runs (`ok`), each rounded to the metric's digits. A metric without a valid run
    has no entry.
    """
    ok = [r for r in runs if r.ok]
    out: dict[str, dict[str, Any]] = {}
    for m in registry.metrics():
        if m.reduce != "median":
            continue
        groups: dict[tuple[str, str], list[Run]] = {}
        for r in ok:
            if r.phase == m.phase and (place := cells.run_place(m, r)) is not None:
                groups.setdefault(place, []).append(r)
        for size, depth in sorted(groups, key=lambda p: (cells.size_order(p[1]), cells.size_order(p[0]))):
            st = describe([_field(r, m.run_field) for r in groups[(size, depth)]], m.digits)
            if st is not None:
                out[cells.stats_key(m, size, depth)] = st
    energy = [decode_energy_per_token(r) for r in ok if r.phase == phases.DECODE]
    st = describe(energy, registry.digits(KEY.energy_decode_j_per_token))
    if st is not None:
        out[KEY.energy_decode_j_per_token] = st
    return out
