"""One walk over the cells of a results document, driven by the metric registry's shapes.

A cell is one number of a variant's `metrics`: a scalar (`decode_tok_s`), one size of a sized
metric (`ttft_s` at 8192), one depth × size of a grid (`prefill_ms_per_token_at_depth` 512 @
d4096), one field of one level of a nested metric (`concurrency` 4 streams, `total_tok_s`). The
loader checks every cell, the CSV writes one row per cell, the table has a row per metric, size
and depth the cells hold, and a cell's `stats_key` is both its key in `metrics_stats` (made from
runs through `run_place`, core/stats.py) and its row key: each walked the same shapes and joined
the same keys on its own before (llama-bench's one field table that every printer iterates is
the model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from precmon.core import registry
from precmon.core.registry import Metric

#: What an object's keys are: sizes (positive integers), depths (integers >= 0) or field names.
Keys = Literal["sizes", "depths", "fields"]
#: (value, its path, what its keys are) → the value as an object. The loader's raises on a value
#: of the wrong shape (`schema.check.Checker.container`); `lenient` reads it as empty.
Container = Callable[[Any, str, Keys], Mapping[str, Any]]


def lenient(value: Any, path: str, keys: Keys) -> Mapping[str, Any]:
    """An object as it is, anything else as empty (renderers: a damaged file shows n/a)."""
    return value if isinstance(value, dict) else {}


def size_order(size: str) -> tuple[int, float, str]:
    """Sizes in numeric order ("512" < "4096" < "16384"), odd keys last."""
    try:
        return (0, float(size), size)
    except ValueError:
        return (1, 0.0, size)


@dataclass(frozen=True)
class RowKey:
    """Which row of the comparison table (and which `metrics_stats` entry) a cell belongs to, as
    values: the metric's registry key, the size ("4096"; a nested metric's level, "4"; "" for a
    scalar) and the sub-key (a grid's depth; "" otherwise). Readers compare these; the joined
    text is only the `metrics_stats` key on disk (`stats_key`), never split again.
    """

    metric: str
    size: str = ""
    sub: str = ""

    @property
    def entry(self) -> Metric:
        return registry.metric(self.metric)

    @property
    def stats_key(self) -> str:
        """The key in a variant's `metrics_stats` ("prefill_ms_per_token:4096")."""
        return stats_key(self.entry, self.size, self.sub)

    def with_size(self, size: str) -> RowKey:
        return RowKey(self.metric, size, self.sub)


@dataclass(frozen=True)
class Cell:
    """One number of a variant's `metrics`.

    Attributes:
        metric: the registry entry.
        size: the size key (sized: prompt or context tokens, or the depth of a metric sized by
            depth; grid: the new-prompt size; nested: the level, e.g. the stream count); "" for a
            scalar.
        depth: a grid's outer key (the context depth); "" otherwise.
        value: as in the file (None where a scalar is absent or null).
        stats_key: its key in `metrics_stats` ("ttft_s:8192", "concurrency:4:total_tok_s").
        path: its field path ("variants[0].metrics.ttft_s.8192" under the walk's `path`).
        variant: the variant's label ("" where the walk was given one variant's metrics).
    """

    metric: Metric
    size: str
    depth: str
    value: Any
    stats_key: str
    path: str
    variant: str = ""

    @property
    def key(self) -> RowKey:
        return RowKey(self.metric.key, self.size, self.depth)


def stats_key(metric: Metric, size: str = "", depth: str = "") -> str:
    """A cell's key in `metrics_stats`, which is also its row key in the comparison table."""
    if metric.shape == "nested":
        return f"{metric.metrics_key}:{size}:{metric.field}"
    return ":".join(x for x in (metric.key, depth, size) if x)


def run_place(metric: Metric, run: Any) -> tuple[str, str] | None:
    """(size, depth) of the cell a run's value belongs to, for a metric made from runs
    (`reduce="median"`): its `size_key` for sized metrics, `group_key` and `size_key` for a grid;
    None where the run lacks them. Scalar metrics: ("", ""). `run`: a `Run`."""
    if metric.shape == "scalar":
        return ("", "")
    names = (metric.size_key, metric.group_key) if metric.shape == "grid" else (metric.size_key,)
    at = [getattr(run, n, None) for n in names]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in at):
        return None
    return (str(at[0]), str(at[1]) if len(at) > 1 else "")


def put(metrics: dict[str, Any], metric: Metric, size: str, depth: str, value: Any) -> None:
    """Write one cell (the inverse of the walk): the scalar, the size of a sized metric, the
    depth × size of a grid, the field of a nested level; objects on the way are made."""
    if metric.shape == "scalar":
        metrics[metric.key] = value
        return
    outer = metrics.setdefault(metric.metrics_key, {})
    if metric.shape == "sized":
        outer[size] = value
    elif metric.shape == "grid":
        outer.setdefault(depth, {})[size] = value
    else:
        outer.setdefault(size, {})[metric.field] = value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def metric_cells(
    metrics: Mapping[str, Any], container: Container = lenient, path: str = "", variant: str = ""
) -> Iterator[Cell]:
    """Every cell of one variant's `metrics`, in the CSV's order: scalar metrics in registry
    order (an always-present one even when absent), then sized, grid and nested ones, sizes in
    numeric order. A nested level holding neither the field nor its legacy name has no cell."""
    table = registry.metrics()
    for m in (m for m in table if m.shape == "scalar"):
        if m.always or m.key in metrics:
            yield Cell(m, "", "", metrics.get(m.key), stats_key(m), _join(path, m.key), variant)
    for m in (m for m in table if m.shape == "sized" and m.key in metrics):
        p = _join(path, m.key)
        values = container(metrics[m.key], p, "depths" if m.size_key == "depth_tokens" else "sizes")
        for size in sorted(values, key=size_order):
            yield Cell(m, size, "", values[size], stats_key(m, size), f"{p}.{size}", variant)
    for m in (m for m in table if m.shape == "grid" and m.key in metrics):
        p = _join(path, m.key)
        levels = container(metrics[m.key], p, "depths")
        for depth in sorted(levels, key=size_order):
            entry = container(levels[depth], f"{p}.{depth}", "sizes")
            for size in sorted(entry, key=size_order):
                yield Cell(m, size, depth, entry[size], stats_key(m, size, depth), f"{p}.{depth}.{size}", variant)
    nested = [m for m in table if m.shape == "nested"]
    for doc_key in dict.fromkeys(m.metrics_key for m in nested if m.metrics_key in metrics):
        p = _join(path, doc_key)
        levels = container(metrics[doc_key], p, "sizes")
        for level in sorted(levels, key=size_order):
            entry = container(levels[level], f"{p}.{level}", "fields")
            for m in (m for m in nested if m.metrics_key == doc_key):
                name = m.field if m.field in entry else m.legacy_field  # older files: legacy names
                if name and name in entry:
                    yield Cell(m, level, "", entry[name], stats_key(m, level), f"{p}.{level}.{name}", variant)


class _Variant(Protocol):
    """What the walk reads of a variant (`core.schema.VariantResult`, which this module cannot
    import: the schema's checks walk the cells)."""

    @property
    def label(self) -> str: ...

    @property
    def metrics(self) -> Mapping[str, Any]: ...


class _Document(Protocol):
    @property
    def variants(self) -> Sequence[_Variant]: ...


def cells(doc: _Document) -> Iterator[Cell]:
    """Every cell of every variant of a results document (`core.schema.ResultsDoc`), in variant order."""
    for v in doc.variants:
        yield from metric_cells(v.metrics, variant=v.label)
