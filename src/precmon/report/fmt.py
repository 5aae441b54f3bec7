"""Number formatting and metric definitions shared by every report output.

One place decides how a value reads ("402.1", "0.0496", "n/a") so the terminal, Markdown, HTML
and the TUI never disagree about the same number.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any, TypeGuard

from precmon.core import registry
from precmon.core.stats import MIN_RUNS_FOR_CI
from precmon.untrusted import visible

NA = "n/a"
FAILED = "failed"
MINUS = "\u2212"  # a real minus sign: "−23%" reads as a reduction, not a dash
TIMES = "\u00d7"
PLUS_MINUS = "\u00b1"
EN_DASH = "\u2013"  # a range: "0–688"
#: After a ratio whose 95% CI overlaps the baseline's. Not "~": the TUI shows a value still being
#: measured as "~123".
NOISE_MARK = "\u2248"
NOISE_LEGEND = f"{NOISE_MARK} inside the run-to-run noise (the 95% CIs overlap); {PLUS_MINUS} is half the 95% CI"


def range_legend(example: str) -> str:
    """Added to `NOISE_LEGEND` where some cell shows its interval as a range (`below_zero_range`);
    `example` is that table's own first range, so the legend names one the reader can find."""
    return f"a range ({example}) is the 95% CI itself, where {PLUS_MINUS} would reach below 0"


_MD_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "&": "&amp;"})


def md_text(text: object) -> str:
    """`text` safe inside a Markdown paragraph or table cell (one line, no markup, no HTML): for
    every renderer that writes Markdown (the report, llama-bench's table)."""
    return visible(str(text).replace("\n", " ")).translate(_MD_ESCAPES)


def metric_definitions(present: Collection[str] = ()) -> tuple[tuple[str, str], ...]:
    """docs/design.md §4 metric definitions, shown under exported tables and in the TUI help.

    Read from `precmon.core.registry` on every call, so a metric added there shows everywhere.
    """
    return registry.glossary(present)


def is_number(value: object) -> TypeGuard[int | float]:
    """True for a finite int/float (bool excluded): the only values a report treats as measured."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def format_value(value: Any, unit: str = "") -> str:
    """Format a measured value with precision that suits its magnitude; `None` → "n/a".

    ≥ 100 → one decimal ("402.1"), ≥ 10 → one decimal ("34.2"), ≥ 1 → two ("2.53"),
    below 1 → three significant digits, trailing zeros kept ("0.0496", "0.310"); a whole
    number of `unit` "tokens" or "users" (a KV cache's capacity) with thousands separators ("262,144").
    """
    if not is_number(value):
        return NA
    v = float(value)
    if unit in ("tokens", "users") and v.is_integer():
        return f"{int(v):,}"
    a = abs(v)
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:#.3g}"


def format_speedup(ratio: float | None) -> str:
    """A speed ratio against the baseline: 1.88 → "1.88×"."""
    if ratio is None or not is_number(ratio):
        return ""
    return f"{ratio:.2f}{TIMES}"


def format_change(ratio: float | None) -> str:
    """A relative change against the baseline: 0.77 → "−23%", 1.05 → "+5%", 1.0 → "±0%"."""
    if ratio is None or not is_number(ratio):
        return ""
    pct = round((ratio - 1.0) * 100.0)
    if pct == 0:
        return "±0%"
    return f"+{pct}%" if pct > 0 else f"{MINUS}{-pct}%"


def format_half_width(half_width: float | None) -> str:
    """Half a 95% CI, to two significant digits (it is an estimate of spread, and narrow cells
    have no room for more): 5.234 → "±5.2", 0.01432 → "±0.014", 12.3 → "±12"; "" without one."""
    if half_width is None or not is_number(half_width):
        return ""
    if half_width == 0:
        return f"{PLUS_MINUS}0"
    digits = max(0, 1 - math.floor(math.log10(abs(half_width))))
    return f"{PLUS_MINUS}{round(half_width, digits):.{digits}f}"


def below_zero_range(
    value: float | None, half_width: float | None, ci95: tuple[float, float] | None = None
) -> tuple[float, float] | None:
    """The 95% interval as (low, high) where "value ± half_width" would read as reaching below 0,
    else None (then "±" says it right).

    The interval of a quantity that cannot be negative is cut at 0 (`stats.describe`: runs of 10,
    200 and 400 give [0, 687.8]), and "214 ±344" then reads as −130…558. So where the low end was
    cut (`ci95[0]` == 0) or `value` − `half_width` < 0, the interval is shown as what it is: the
    stored `ci95` where there is one, else `value` ± `half_width` with its low end at 0. A quantity
    that can be negative keeps its "±": a negative `value`, or a stored interval below 0 (describe
    cuts only where every run was >= 0).
    """
    if not is_number(value) or not is_number(half_width) or value < 0 or half_width <= 0:
        return None
    if ci95 is not None:
        if ci95[0] < 0 or (ci95[0] > 0 and value - half_width >= 0):
            return None
        return ci95[0], ci95[1]
    if value - half_width >= 0:
        return None
    return 0.0, value + half_width


def _bound(x: float) -> str:
    """One end of a range, to two significant digits as `format_half_width` (cells are narrow),
    whole numbers whole: 687.8 → "688", 12.34 → "12", 5.2886 → "5.3", 0.01224 → "0.012", 0 → "0"."""
    if x == 0:
        return "0"
    return f"{x:.0f}" if abs(x) >= 10 else f"{x:.2g}"


def format_spread(
    value: float | None, half_width: float | None, ci95: tuple[float, float] | None = None, prose: bool = False
) -> str:
    """What stands beside a value for its 95% interval, in every renderer (terminal, `bench`,
    Markdown, HTML, `compare`, the TUI sweep table, the quality sentences): "±5.2" (half its width,
    `format_half_width`), or "0–688" where ± would reach below 0 (`below_zero_range`); "" without
    an interval.

    Args:
        value: the value shown beside it (a cell's median).
        half_width: half the interval's width.
        ci95: the interval itself, where one is stored (`metrics_stats`), else None.
        prose: in a sentence: "± 0.0011" (`format_value`'s digits), or "(95%: 0–0.0042)".
    """
    if half_width is None or not is_number(half_width):
        return ""
    rng = below_zero_range(value, half_width, ci95)
    if rng is not None:
        text = f"{_bound(rng[0])}{EN_DASH}{_bound(rng[1])}"
        return f"(95%: {text})" if prose else text
    return f"{PLUS_MINUS} {format_value(half_width)}" if prose else format_half_width(half_width)


def too_few_for_interval(n: int, short: bool = False) -> str:
    """What a value of `n` valid runs (n < `MIN_RUNS_FOR_CI`) shows where its 95% interval would be.

    The one wording of every renderer (terminal, `bench` stdout, Markdown, HTML, the TUI table):
    `short` in a cell ("n=2: no CI"), the long form once under the table. Showing nothing read as
    "no spread"; an interval of 2 runs (t = 12.7) is the bogus −96…524 of `bench --quick`.
    """
    if short:
        return f"n={n}: no CI"
    return f"n = {n}: too few for an interval (a 95% CI needs {MIN_RUNS_FOR_CI} runs)"


def human_tokens(size: str) -> str:
    """'4096' → '4K', '16384' → '16K', '512' → '512' (for row labels)."""
    try:
        n = int(size)
    except ValueError:
        return size
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    return str(n)
