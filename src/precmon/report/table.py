"""The comparison table: rows = metrics of docs/design.md §4, columns = precision variants.

`build_table` turns a results document (docs/design.md §5) into a plain, frozen data model that
every renderer reads: the terminal (`terminal.to_rich_table`), the Markdown/HTML exports and the
TUI's sweep panel. It tolerates partial documents (a sweep in progress: missing keys read as
"n/a"), so the TUI can rebuild it after every landed measurement.

Ratios are against a baseline column (default: the first variant that did not fail):
- speed rows (tok/s, ms/token, TTFT): "how many times faster", e.g. "1.88×" — for a
  lower-is-better row (ms/token, s) that is baseline ÷ value, so > 1 always means better;
- cost rows (W, J/token, GB): the relative change, e.g. "−23%" (value ÷ baseline − 1).

Each cell also carries its run-to-run statistics (`metrics_stats` of docs/design.md §8, keyed by
the row key's `stats_key`; for files written before precmon recorded them, worked out from the runs with the
same function): `half_width` is half the 95% CI (shown as "±"), and `noise` says whether the
cell's CI overlaps the baseline's, i.e. whether its ratio is inside the run-to-run noise (shown
with `fmt.NOISE_MARK` and the legend `fmt.NOISE_LEGEND`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

from precmon.core.cells import RowKey
from precmon.core.schema import ResultsDoc, VariantResult
from precmon.core.stats import MIN_RUNS_FOR_CI, half_width, metrics_stats, overlaps
from precmon.report.fmt import (
    FAILED,
    NOISE_LEGEND,
    below_zero_range,
    format_change,
    format_speedup,
    format_spread,
    format_value,
    is_number,
    range_legend,
    too_few_for_interval,
)
from precmon.report.rows import RowSpec, row_specs
from precmon.untrusted import visible

WARN_MARK = "⚠"


class BaselineError(ValueError):
    """The requested baseline label is not a variant of the document."""


LABEL_CHARS = 18  # a table header longer than this would squeeze the other columns to nothing


def short_label(text: object, limit: int = LABEL_CHARS) -> str:
    """`text` made visible and, when longer than `limit`, cut in the middle (…): both ends stay,
    so `Llama-3.1-8B-Instruct-FP8` and `…-FP16` remain told apart."""
    s = visible(text)
    if len(s) <= limit:
        return s
    head = (limit - 1) // 2
    return s[:head] + "\u2026" + s[len(s) - (limit - 1 - head) :]


def header_label(text: object, width: int = LABEL_CHARS, lines: int = 3) -> str:
    """A column header: `text` wrapped at `width` on up to `lines` lines (cut in the middle beyond),
    so a long label or a compare column's "host · label · date" keeps its words and its width."""
    s = short_label(text, width * lines)
    wrapped = textwrap.wrap(s, width, break_on_hyphens=False) or [""]
    if len(wrapped) > lines:  # word breaks wasted room: plain slices always fit
        wrapped = [s[i : i + width] for i in range(0, len(s), width)]
    return "\n".join(wrapped)


@dataclass(frozen=True)
class Column:
    """One variant (a column of the table)."""

    label: str
    precision: str | None
    model: str | None
    status: str  # "ok" | "partial" | "failed"
    error: str | None  # the first entry of the variant's `errors`, if any
    is_baseline: bool
    # The variant's `warnings` (docs/design.md §4 "Trust"): measured, but perhaps disturbed.
    warnings: tuple[str, ...] = ()

    @property
    def mark(self) -> str:
        """ " ⚠" after a header whose variant has warnings, else ""."""
        return f" {WARN_MARK}" if self.warnings else ""


@dataclass(frozen=True)
class Cell:
    """One variant's value for one metric.

    Attributes:
        value: the median as measured (float) or None when not measured.
        text: `value` formatted for display; "n/a" when None, "failed" when None in a failed variant.
        ratio: against the baseline: for speed rows the speed-up (> 1 is better), for cost rows
            value ÷ baseline (< 1 is a saving); None for the baseline itself or when either is missing.
        ratio_text: `ratio` formatted ("1.88×", "−23%"), "" when `ratio` is None.
        series: per-run values behind the median (valid runs, in order), for sparklines.
        status: "ok" (a value), "missing" (None) or "failed" (None in a failed variant).
        half_width: half the 95% CI of the runs (None: fewer than `MIN_RUNS_FOR_CI` valid runs, or
            no statistics; `too_few` tells the first apart).
        noise: True when this cell's 95% CI overlaps the baseline's (the ratio is inside the
            run-to-run noise), False when they are apart, None for the baseline or without CIs.
        n: valid runs behind the value (None without statistics).
        ci95: the stored 95% interval (low, high) behind `half_width` (None where `half_width` is
            the metric's own ± or absent): cut at 0, it is shown as a range (`fmt.format_spread`).
    """

    value: float | None
    text: str
    ratio: float | None
    ratio_text: str
    series: tuple[float, ...]
    status: str
    half_width: float | None = None
    noise: bool | None = None
    n: int | None = None
    ci95: tuple[float, float] | None = None

    @property
    def too_few(self) -> bool:
        """Measured with statistics, but on too few runs for a 95% interval (n = 1 or 2)."""
        return self.half_width is None and self.n is not None and 0 < self.n < MIN_RUNS_FOR_CI

    @property
    def ranged(self) -> bool:
        """Its interval is shown as a range, not "±" (`fmt.below_zero_range`)."""
        return below_zero_range(self.value, self.half_width, self.ci95) is not None

    @property
    def spread(self) -> str:
        """What stands where the interval goes: "±5.2", "0–688" (an interval cut at 0: ± would
        read below it), "n=2: no CI" (`too_few`), else ""."""
        if self.too_few and self.n is not None:
            return too_few_for_interval(self.n, short=True)
        return format_spread(self.value, self.half_width, self.ci95)


@dataclass(frozen=True)
class Row:
    """One metric across all variants.

    Attributes:
        key: which metric, size and depth (core/cells.py `RowKey`), e.g. RowKey("decode_tok_s"),
            RowKey("prefill_ms_per_token", "4096"), RowKey("concurrency_total_tok_s", "4").
        label: human label without the unit, e.g. "Prefill (4K prompt)".
        unit: "tok/s", "ms/token", "s", "W", "J/token", "GB".
        better: "higher" or "lower".
        ratio_kind: "speedup" or "change" (see the module docstring).
        cells: one per column, in column order.
    """

    key: RowKey
    label: str
    unit: str
    better: str
    ratio_kind: str
    cells: tuple[Cell, ...]

    def best_index(self) -> int | None:
        """Index of the column with the best value (None when no column has one)."""
        scored = [(c.value, i) for i, c in enumerate(self.cells) if c.value is not None]
        if not scored:
            return None
        pick = max(scored) if self.better == "higher" else min(scored)
        return pick[1]


@dataclass(frozen=True)
class ComparisonTable:
    """The whole table: columns (variants) and rows (metrics)."""

    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    baseline_index: int | None

    @property
    def warned(self) -> tuple[Column, ...]:
        """The columns with warnings, in column order."""
        return tuple(c for c in self.columns if c.warnings)

    def warning_lines(self) -> list[tuple[str, str]]:
        """(label, warning) for every warning of every column, as the file has them."""
        return [(c.label, w) for c in self.columns for w in c.warnings]

    @property
    def baseline(self) -> Column | None:
        return None if self.baseline_index is None else self.columns[self.baseline_index]

    def has_stats(self) -> bool:
        """Whether some cell shows a ± or a noise mark (so the renderers print `NOISE_LEGEND`)."""
        return any(c.half_width is not None or c.noise for r in self.rows for c in r.cells)

    def legend(self) -> str | None:
        """The legend under the table (`NOISE_LEGEND`, with `RANGE_LEGEND` where a cell shows its
        interval as a range), None when no cell shows a ± or a noise mark."""
        if not self.has_stats():
            return None
        example = next((c.spread for r in self.rows for c in r.cells if c.ranged), None)
        return f"{NOISE_LEGEND}; {range_legend(example)}" if example else NOISE_LEGEND

    def too_few_notes(self) -> list[str]:
        """One line per run count of the cells too few for an interval ("n = 2: too few for an
        interval (…)"), for the renderers' notes under the table; [] when every cell has one."""
        ns = sorted({c.n for r in self.rows for c in r.cells if c.too_few and c.n is not None})
        return [too_few_for_interval(n) for n in ns]

    def row(self, key: RowKey | str) -> Row | None:
        """The row of `key`; a plain string is a scalar metric's registry key ("decode_tok_s")."""
        want = RowKey(key) if isinstance(key, str) else key
        return next((r for r in self.rows if r.key == want), None)

    def value(self, key: RowKey | str, label: str) -> float | None:
        """The value of row `key` (as `row`) for variant `label` (None if absent)."""
        row = self.row(key)
        for col, cell in zip(self.columns, row.cells if row else (), strict=False):
            if col.label == label:
                return cell.value
        return None


def resolve_baseline(variants: list[VariantResult], baseline: str | None) -> int | None:
    """Index of the baseline variant: the one labelled `baseline`, else the first that did not fail.

    Raises:
        BaselineError: `baseline` names no variant (the message lists the labels there are).
    """
    if not variants:
        return None
    labels = [v.label for v in variants]
    if baseline is not None:
        if baseline in labels:
            return labels.index(baseline)
        folded = [lab.casefold() for lab in labels]
        if baseline.casefold() in folded:
            return folded.index(baseline.casefold())
        raise BaselineError(f"baseline {baseline!r} is not a variant (have: {', '.join(labels)})")
    for i, v in enumerate(variants):
        if v.status != "failed":
            return i
    return 0


def _ratio(spec: RowSpec, value: float | None, base: float | None) -> float | None:
    if value is None or base is None or value == 0 or base == 0:
        return None
    if spec.ratio_kind == "speedup" and spec.better == "lower":
        return base / value
    return value / base


def variant_stats(variant: VariantResult) -> dict[str, Any]:
    """The variant's `metrics_stats` as recorded, else worked out from its runs (older files)."""
    if variant.metrics_stats is not None:
        return variant.metrics_stats
    return metrics_stats(variant.runs)


def _cell(
    spec: RowSpec, variant: VariantResult, base: float | None, is_base: bool, stats: Any, base_stats: Any
) -> Cell:
    raw = spec.value(variant)
    value = float(raw) if is_number(raw) else None
    series = tuple(float(s) for s in spec.series(variant) if is_number(s))
    if value is None:
        status = "failed" if variant.status == "failed" else "missing"
        text = FAILED if status == "failed" else format_value(None)
        return Cell(None, text, None, "", series, status)
    ratio = None if is_base or spec.ratio_kind == "none" else _ratio(spec, value, base)
    ratio_text = format_speedup(ratio) if spec.ratio_kind == "speedup" else format_change(ratio)
    st = stats if isinstance(stats, dict) else None
    noise = None if is_base or ratio is None else overlaps(st, base_stats if isinstance(base_stats, dict) else None)
    n = st.get("n") if st is not None and isinstance(st.get("n"), int) else None
    half = half_width(st)
    ci = (float(st["ci95"][0]), float(st["ci95"][1])) if half is not None and st is not None else None
    if ci is not None and ci[0] < 0 and series and min(series) >= 0:  # written before describe cut at 0
        ci = (0.0, ci[1])
    own_err = spec.error(variant) if spec.error is not None else None
    if is_number(own_err) and not (is_base and own_err == 0):  # the baseline's 0 ± 0 says nothing
        half, ci = float(own_err), None
    return Cell(value, format_value(value, spec.unit), ratio, ratio_text, series, "ok", half, noise, n, ci)


def build_table(doc: ResultsDoc, baseline: str | None = None) -> ComparisonTable:
    """Build the comparison table of a results document (docs/design.md §5).

    Args:
        doc: the results document (complete, or partial while a sweep runs).
        baseline: label of the variant ratios are computed against (case-insensitive);
            default the first variant that did not fail.

    Returns:
        The table model; rows only for concurrency / long-context when some variant measured them.

    Raises:
        BaselineError: `baseline` is not one of the variants' labels.
    """
    variants = doc.variants
    base_i = resolve_baseline(variants, baseline)
    columns = tuple(
        Column(
            label=v.label,
            precision=v.precision,
            model=v.model,
            status=v.status or "ok",
            error=str(v.errors[0]) if v.errors else None,
            is_baseline=i == base_i,
            warnings=tuple(v.warnings or ()),
        )
        for i, v in enumerate(variants)
    )
    stats = [variant_stats(v) for v in variants]
    rows = []
    for spec in row_specs(doc):
        key = spec.key.stats_key
        base_raw = spec.value(variants[base_i]) if base_i is not None else None
        base_value = float(base_raw) if is_number(base_raw) else None
        base_stats = stats[base_i].get(key) if base_i is not None else None
        cells = tuple(
            _cell(spec, v, base_value, i == base_i, stats[i].get(key), base_stats) for i, v in enumerate(variants)
        )
        rows.append(Row(spec.key, spec.label, spec.unit, spec.better, spec.ratio_kind, cells))
    return ComparisonTable(columns, tuple(rows), base_i)
