"""Which rows the comparison table has, and where each reads its value and per-run series.

A `RowSpec` is one row made from a `precmon.core.registry.Metric` (label, unit, which direction
is better) and a size, keyed by its `RowKey` (core/cells.py), with two readers over a
`VariantResult` — the median from `metrics` and the per-run values from `runs` (only valid runs,
`ok`). Sizes (prompt tokens, streams, context) come from every variant's metrics plus the
settings (`Metric.settings_key`), so a size nobody could measure still shows as a row of "n/a".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from precmon.core import phases, registry
from precmon.core.cells import Cell, RowKey, cells, size_order
from precmon.core.concurrency import stream_count
from precmon.core.registry import Metric
from precmon.core.schema import ResultsDoc, Run, RunExtra, VariantResult
from precmon.core.stats import decode_energy_per_token
from precmon.report.depth_rows import CURVE_KEY, CURVE_UNIT, DEPTH_CURVE_OF, curve_label, curve_series, curve_value
from precmon.report.fmt import human_tokens, is_number
from precmon.untrusted import visible

Variant = VariantResult
BASELINE_CHARS = 18  # a longer label is cut (…) in "KL div vs LABEL"


@dataclass(frozen=True)
class RowSpec:
    key: RowKey
    label: str
    unit: str
    better: str  # "higher" | "lower"
    ratio_kind: str  # "speedup" | "change" | "none"
    value: Callable[[Variant], Any]
    series: Callable[[Variant], list[Any]]
    # The cell's ± where a metric records its own (registry `Metric.error_key`), else None.
    error: Callable[[Variant], Any] | None = None


def _size_of(run: Run, size_key: str) -> Any:
    """The run's size by the registry's `size_key` (a prefill run without a target: its prompt)."""
    size = getattr(run, size_key, None)
    return run.prompt_tokens if size is None and size_key == "target_prompt_tokens" else size


def _runs(
    variant: Variant,
    phase: str,
    size: str | None = None,
    size_key: str = "target_prompt_tokens",
    depth: str | None = None,
) -> list[Run]:
    """The valid runs of `phase`, of one size (by `size_key`) and one depth where given."""
    out: list[Run] = []
    for run in variant.runs:
        if run.phase != phase or not run.ok:
            continue
        if size is not None and str(_size_of(run, size_key)) != size:
            continue
        if depth is not None and str(run.depth_tokens) != depth:
            continue
        out.append(run)
    return out


def _scalar(key: str) -> Callable[[Variant], Any]:
    return lambda v: v.metrics.get(key)


def _sized(key: str, size: str) -> Callable[[Variant], Any]:
    def read(v: Variant) -> Any:
        d = v.metrics.get(key)
        return d.get(size) if isinstance(d, dict) else None

    return read


def _run_field(
    phase: str, field: str, size: str | None = None, size_key: str = "target_prompt_tokens", depth: str | None = None
) -> Callable[[Variant], list[Any]]:
    return lambda v: [_named(r, field) for r in _runs(v, phase, size, size_key, depth)]


def _power_series(phase: str) -> Callable[[Variant], list[Any]]:
    """Per-second watts through the phase's runs, where recorded (`extra.power_w_per_s`); else one
    value per run."""

    def read(v: Variant) -> list[Any]:
        runs = _runs(v, phase)
        per_s = [w for r in runs for w in r.extra.power_w_per_s or []]
        return per_s or [r.power_w for r in runs]

    return read


def _idle_series(v: Variant) -> list[Any]:
    return list(v.power_idle.power_w_per_s or []) if v.power_idle is not None else []


def _prefill_series(size: str) -> Callable[[Variant], list[Any]]:
    def read(v: Variant) -> list[Any]:
        out: list[Any] = []
        for r in _runs(v, phases.PREFILL, size):
            ms: Any = r.prefill_ms_per_token
            if not is_number(ms) and is_number(r.ttft_s) and is_number(r.prompt_tokens) and r.prompt_tokens > 0:
                ms = r.ttft_s * 1000.0 / r.prompt_tokens
            out.append(ms)
        return out

    return read


def _energy_series(v: Variant) -> list[Any]:
    """J/token of each decode run, as the metric counts it (a shape for the sparkline)."""
    return [decode_energy_per_token(r) for r in _runs(v, phases.DECODE)]


def _level_field(entry: Any, field: str, legacy: str = "") -> Any:
    """`entry[field]`, or in an older file `entry[legacy]` (registry `Metric.legacy_field`)."""
    if not isinstance(entry, dict):
        return None
    return entry.get(field) if field in entry or not legacy else entry.get(legacy)


def _named(record: Run | RunExtra, name: str) -> Any:
    """A figure of a run (or its `extra`) by the registry's name: the declared field, else a key
    only an older file has (kept in `more`)."""
    value = getattr(record, name, None)
    return value if value is not None else record.more.get(name)


def _run_level_field(run: Run, field: str, legacy: str = "") -> Any:
    """A concurrency run's figure `field` (older files: `legacy`), from `extra` (the oldest files:
    from the run itself)."""
    names = [n for n in (field, legacy) if n]
    inner: Run | RunExtra = run.extra if any(_named(run.extra, n) is not None for n in names) else run
    return next((v for n in names if (v := _named(inner, n)) is not None), None)


def _concurrency_series(level: str, field: str, legacy: str = "") -> Callable[[Variant], list[Any]]:
    """One value per repeat of the level (older files: one run per level, `extra` or the run)."""

    def read(v: Variant) -> list[Any]:
        runs = [r for r in _runs(v, phases.CONCURRENCY) if str(stream_count(r)) == level]
        return [_run_level_field(r, field, legacy) for r in runs]

    return read


def _sizes(doc: ResultsDoc, found: Iterable[str], settings_key: str | None = None) -> list[str]:
    """The sizes `found` in the file's cells and those its settings planned, in numeric order."""
    sizes = set(found)
    setting = doc.settings.get(settings_key) if settings_key else None
    if isinstance(setting, list):
        sizes.update(str(s) for s in setting)
    elif is_number(setting):
        sizes.add(str(setting))
    return sorted(sizes, key=size_order)


def _levels(doc: ResultsDoc, key: str) -> set[str]:
    """The levels of nested metric object `key` over every variant (stream counts of
    `concurrency`), a level without any of the registry's fields too."""
    out: set[str] = set()
    for v in doc.variants:
        levels = v.metrics.get(key)
        out.update(str(level) for level in (levels if isinstance(levels, dict) else {}))
    return out


def _sized_value(key: str, size: str, field: str = "", legacy: str = "") -> Callable[[Variant], Any]:
    def read(v: Variant) -> Any:
        d = _sized(key, size)(v)
        return _level_field(d, field, legacy) if field else d

    return read


def _series(m: Metric, size: str | None = None, depth: str | None = None) -> Callable[[Variant], list[Any]]:
    """The per-run series reader the registry names for `m` (`Metric.series`); `depth` for a grid
    metric's outer level."""
    if m.series == "prefill" and size is not None:
        return _prefill_series(size)
    if m.series == "power":
        return _power_series(m.phase)
    if m.series == "idle":
        return _idle_series
    if m.series == "energy":
        return _energy_series
    if m.series == "level" and size is not None:
        return _concurrency_series(size, m.field, m.legacy_field)
    if m.series == "run_field" and m.phase and m.run_field:
        return _run_field(m.phase, m.run_field, size, m.size_key, depth)
    return lambda v: []


def _scaled(read: Callable[[Variant], Any], scale: float) -> Callable[[Variant], Any]:
    """`read` × `scale` for a number (a fraction shown as %), anything else as it is."""
    if scale == 1.0:
        return read

    def scaled(v: Variant) -> Any:
        x = read(v)
        return x * scale if is_number(x) else x

    return scaled


def _spec(m: Metric, label: str, size: str = "", depth: str = "") -> RowSpec:
    if m.shape == "scalar":
        value = _scaled(_scalar(m.key), m.scale)
    elif m.shape == "grid":
        value = _grid_value(m.metrics_key, depth, size)
    else:
        value = _sized_value(m.metrics_key, size, m.field, m.legacy_field)
    error = _scaled(_scalar(m.error_key), m.scale) if m.error_key and m.shape == "scalar" else None
    series = _series(m, size or None, depth or None)
    return RowSpec(RowKey(m.key, size, depth), label, m.unit, m.better, m.ratio_kind, value, series, error)


def _grid_value(key: str, depth: str, size: str) -> Callable[[Variant], Any]:
    def read(v: Variant) -> Any:
        levels = v.metrics.get(key)
        entry = levels.get(depth) if isinstance(levels, dict) else None
        return entry.get(size) if isinstance(entry, dict) else None

    return read


def quality_baseline(doc: ResultsDoc) -> str:
    """The baseline label the quality rows name ("KL div vs F16"): the first variant's `quality.baseline`."""
    for v in doc.variants:
        base = v.quality.baseline if v.quality is not None else None
        if isinstance(base, str):
            name = visible(base)  # from the file: no escapes in a row label
            return name if len(name) <= BASELINE_CHARS else name[: BASELINE_CHARS - 1] + "\u2026"
    return "baseline"


def row_specs(doc: ResultsDoc) -> list[RowSpec]:
    """The rows of the comparison table for this document, in display order (`Metric.row`).

    Which metrics, sizes and depths have rows is read from the document's cells (core/cells.py,
    the walk the loader checks and `metrics_stats` is keyed by; a row's key is its cells'
    `RowKey`) and the settings' planned sizes. Sized metrics give one row per size; nested
    ones (concurrency) one row per level and field, the fields of a level together.
    """
    walked: dict[str, list[Cell]] = {}
    for c in cells(doc):
        walked.setdefault(c.metric.key, []).append(c)
    specs: list[RowSpec] = []
    done: set[str] = set()
    table = registry.table_metrics()
    for m in table:
        if m.shape == "scalar":
            if m.always or m.key in walked:  # a metric not in every file (quality): where planned
                label = m.label.format(baseline=quality_baseline(doc)) if "{baseline}" in m.label else m.label
                specs.append(_spec(m, label))
        elif m.shape == "sized":
            sizes = _sizes(doc, (str(c.size) for c in walked.get(m.key, ())), m.settings_key)
            for size in sizes:
                label = m.label.format(size=human_tokens(size), depth=visible(size))
                specs.append(_spec(m, label, size))
            if m.key == DEPTH_CURVE_OF and len(sizes) > 1:  # decode vs depth, drawn as the sparkline
                label = curve_label([visible(x) for x in sizes])
                specs.append(RowSpec(CURVE_KEY, label, CURVE_UNIT, "higher", "change", curve_value, curve_series))
        elif m.shape == "grid":
            pairs = {(str(c.depth), str(c.size)) for c in walked.get(m.key, ())}
            for depth, size in sorted(pairs, key=lambda p: (size_order(p[0]), size_order(p[1]))):
                label = m.label.format(size=human_tokens(size), depth=visible(depth))
                specs.append(_spec(m, label, size, depth))
        elif m.metrics_key not in done:
            done.add(m.metrics_key)
            # an older file has no TTFT p99 or J/token, and gets no rows of n/a for them
            group = [g for g in table if g.shape == "nested" and g.metrics_key == m.metrics_key and g.key in walked]
            for level in _sizes(doc, _levels(doc, m.metrics_key), m.settings_key):
                streams = f"{level} stream{'' if level == '1' else 's'}"
                specs += [_spec(g, g.label.format(streams=streams), level) for g in group]
    return specs
