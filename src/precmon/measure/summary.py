"""A variant's summary from its runs: medians, the planned nulls, the concurrency curve, validity
figures and warnings, errors for excluded runs, and the status (docs/design.md §5).

It reads the runs and the plan's facts, never the server. It is idempotent: a second summary
(after more runs, or after a caller added the cause of a failure) gives what one summary of the
same runs would, because `summarize` first takes out exactly what the previous one added (the
`Added` it returned), rather than every note that starts like one of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from precmon.core import registry
from precmon.core.metric_keys import KEY
from precmon.core.phases import CONCURRENCY, DECODE, PREFILL, WARMUP
from precmon.core.schema import Run, VariantResult
from precmon.core.stats import decode_energy_per_token, median, metrics_stats
from precmon.measure.checks import positive_finite
from precmon.measure.concurrency.check import queued_warning
from precmon.measure.concurrency.curve import curve, curve_stats
from precmon.measure.depth import run as depth_run
from precmon.measure.nodes import summarize_nodes
from precmon.measure.plan import Sizes
from precmon.measure.trust import server_truth, validity
from precmon.measure.trust.probe import ValidityProbe
from precmon.measure.trust.spark import spark_checks


@dataclass(frozen=True)
class PlanFacts:
    """What the summary needs to know of the plan: the sizes it measured (those that fit the
    server's context), its concurrency levels, and whether it ran to its end."""

    sizes: Sizes
    concurrency: tuple[int, ...]
    completed: bool


@dataclass(frozen=True)
class Added:
    """What one summary added to the variant's lists (notes are in `errors` too)."""

    notes: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def summarize(res: VariantResult, facts: PlanFacts, probe: ValidityProbe | None, previous: Added = Added()) -> Added:
    """Summarise `res` in place; returns what it added, for the next summary to take out."""
    _take_out(res, previous)
    before = (list(res.notes), list(res.errors), list(res.warnings or []))
    _metrics(res, facts)
    _errors_and_status(res, facts)
    _validity(res, [r for r in res.runs if r.ok], probe)
    res.decisive_first()
    return Added(_new(before[0], res.notes), _new(before[1], res.errors), _new(before[2], res.warnings or []))


def _take_out(res: VariantResult, added: Added) -> None:
    """Remove one occurrence of each entry `added` names (a caller's equal line stays)."""
    for items, gone in ((res.notes, added.notes), (res.errors, added.errors)):
        for item in gone:
            if item in items:
                items.remove(item)
    warnings = res.warnings
    if warnings is not None:
        for item in added.warnings:
            if item in warnings:
                warnings.remove(item)


def _new(before: list[str], after: list[str]) -> tuple[str, ...]:
    """The entries of `after` that `before` did not have (counted, so a repeated line is one)."""
    left = Counter(before)
    out = []
    for item in after:
        if left[item]:
            left[item] -= 1
        else:
            out.append(item)
    return tuple(out)


def _metrics(res: VariantResult, facts: PlanFacts) -> None:
    """Every planned metric has a key (null until measured, docs/design.md §5), then the medians,
    depth, energy, server prefill, prefill power and the concurrency curve."""
    m, sizes = res.metrics, facts.sizes
    for size in sizes.prefill:
        m[KEY.prefill_ms_per_token].setdefault(str(size), None)
        m[KEY.server_prefill_ms_per_token].setdefault(str(size), None)
    if sizes.ttft:
        m[KEY.ttft_s].setdefault(str(sizes.ttft), None)
        m[KEY.server_ttft_s].setdefault(str(sizes.ttft), None)
    ok = [r for r in res.runs if r.ok]
    _medians(res, ok)  # every metric the registry makes as a median of a run field
    for note in depth_run.summarize(res, sizes.depth):
        res.note(note)
    stats = metrics_stats(res.runs) | curve_stats(res.runs)
    res.metrics_stats = stats
    res.warnings = warnings = res.warnings if res.warnings is not None else []
    if queued := queued_warning(r for r in res.runs if r.phase == CONCURRENCY):
        warnings.append(queued)
    warnings.extend(w for w in validity.noisy_warnings(stats) if w not in warnings)
    dec = [r for r in ok if r.phase == DECODE]
    energies = [e for r in dec if (e := decode_energy_per_token(r)) is not None]
    m[KEY.energy_decode_j_per_token] = _rk(KEY.energy_decode_j_per_token, median(energies))
    pre = [r for r in ok if r.phase == PREFILL]
    for size in sorted({r.target_prompt_tokens for r in pre if r.target_prompt_tokens}):
        runs = [r for r in pre if r.target_prompt_tokens == size]
        srv = [1000.0 / rate for r in runs if (rate := positive_finite(r.server_timings.get("prompt_per_second")))]
        m[KEY.server_prefill_ms_per_token][str(size)] = _rk(KEY.server_prefill_ms_per_token, median(srv))
    m[KEY.power_prefill_w] = _rk(KEY.power_prefill_w, time_weighted_watts(pre))
    warnings.extend(w for w in summarize_nodes(res) if w not in warnings)  # several nodes: who drew what
    if any(r.phase == CONCURRENCY for r in res.runs):
        m[KEY.concurrency] = curve(res.runs)


def _errors_and_status(res: VariantResult, facts: PlanFacts) -> None:
    for r in res.runs:
        if not r.ok and r.reason:
            msg = f"{r.phase} run excluded: {r.reason}"
            if msg not in res.errors:
                res.errors.append(msg)
    if res.metrics[KEY.decode_tok_s] is None:
        res.status = "failed"
        if not any("decode" in e for e in res.causes):
            res.errors.append("no valid decode run")
    elif not facts.completed or _missing(res, facts) or any(not r.ok for r in res.runs if r.phase != WARMUP):
        res.status = "partial"  # `--resume` measures a partial variant again
        res.partial_reason = _partial_reason(res, facts)
    else:
        res.status = "ok"
        res.partial_reason = None


def _validity(res: VariantResult, ok: list[Run], probe: ValidityProbe | None) -> None:
    """The variant's `validity` figures and `warnings` (measure/trust/validity.py), first in the list."""
    figures: dict[str, Any] = {}
    found: list[str] = []
    figures["client_server"], warn = validity.client_server_gap(ok)
    found += warn
    figures["server_timings"], notes = server_truth.server_timings(ok)
    figures["prefix_cache"], more = server_truth.prefix_cache(res.runs)
    for note in notes + more:
        res.note(note)
    if probe is None:
        figures["host_cpu"] = figures["gpu"] = {"reason": "n/a: the plan did not reach its first run"}
    else:
        if probe.last is None:  # the plan ended by an exception before `run` finished it
            probe.finish()
        figures["host_cpu"], warn = probe.host_figures()
        found += warn
        pids = probe.pids if probe.server_found else None
        spbm = bool(probe.spark_ids)
        figures["gpu"], warn = validity.gpu_checks(probe.facts, probe.gpu_samples, pids, probe.own_pid, spbm)
        found += warn
        for cid in probe.spark_ids:  # a DGX Spark with the spbm driver: its limits and PROCHOT
            figures.setdefault("spark", {})[cid], warn = spark_checks(probe.spark_samples.get(cid, []), cid)
            found += warn
    res.validity = (res.validity or {}) | figures
    res.warnings = found + list(res.warnings or [])


def _medians(res: VariantResult, ok: list[Run]) -> None:
    """The registry's `reduce="median"` and `"server_median"` metrics: the median of `run_field`
    (or of the server's `server_field`) over the valid runs of `phase`, per size (`size_key`)
    for sized metrics, rounded to the metric's digits. A metric that is not always present
    (long-context decode, the server's ITL) appears only when measured."""
    m = res.metrics
    for metric in registry.metrics():
        if metric.reduce not in ("median", "server_median"):
            continue
        runs = [r for r in ok if r.phase == metric.phase]
        if metric.shape == "scalar":
            value = _r(median([_value(metric, r) for r in runs]), metric.digits)
            if metric.always or value is not None:
                m[metric.key] = value
            continue
        if metric.shape == "grid":  # {group: {size: value}} (prefill at depth)
            groups = sorted({g for r in runs if (g := getattr(r, metric.group_key)) is not None})
            if groups:
                m[metric.key] = {
                    str(g): _by_size(metric, [r for r in runs if getattr(r, metric.group_key) == g]) for g in groups
                }
            continue
        by_size = _by_size(metric, runs)
        if not metric.always and not by_size:
            continue
        m[metric.key] = (m.setdefault(metric.key, {}) | by_size) if metric.always else by_size


def _partial_reason(res: VariantResult, facts: PlanFacts) -> str:
    """Why a result is partial, in one line (the errors list also holds notes that are not causes)."""
    bad = [r for r in res.runs if not r.ok and r.phase != WARMUP]
    if bad:
        first = bad[0]
        size = f" {first.target_prompt_tokens}" if first.target_prompt_tokens else ""
        return f"{len(bad)} run(s) excluded, first {first.phase}{size}: {first.reason or 'invalid'}"
    if not facts.completed:
        return "the plan did not finish (stopped)"
    return "a planned metric has no value"


def _missing(res: VariantResult, facts: PlanFacts) -> bool:
    """A planned metric that has no value."""
    m, sizes = res.metrics, facts.sizes
    if any(m[KEY.prefill_ms_per_token].get(str(x)) is None for x in sizes.prefill):
        return True
    if sizes.ttft and m[KEY.ttft_s].get(str(sizes.ttft)) is None:
        return True
    long = m.get(KEY.long_context_decode_tok_s) or {}
    if any(long.get(str(x)) is None for x in sizes.long_context):
        return True
    conc = m.get(KEY.concurrency) or {}
    return any(str(n) not in conc for n in facts.concurrency) or depth_run.missing(m, sizes.depth)


def time_weighted_watts(runs: list[Run]) -> float | None:
    """Average power over all of a phase's runs: their energy ÷ their time.

    Prefill windows run from tens of milliseconds (512 tokens on a datacenter GPU) to seconds: a
    median of their averages is mostly short windows, which no power source resolves (instant
    watts of identical short prefills spread several-fold), while energy ÷ time weights each run
    by how long it was measured. Returns None without a run that has both.
    """
    pairs = [
        (r.energy_j, r.energy_j / r.power_w) for r in runs if r.energy_j is not None and r.power_w and r.power_w > 0
    ]
    total_s = sum(t for _, t in pairs)
    return sum(e for e, _ in pairs) / total_s if total_s > 0 else None


def _by_size(metric: registry.Metric, runs: list[Run]) -> dict[str, float | None]:
    """{size: the median of `metric` over `runs` of that size} (sizes by `metric.size_key`; 0 is one)."""
    sizes = sorted({size for r in runs if (size := getattr(r, metric.size_key)) is not None})
    return {
        str(size): _r(median([_value(metric, r) for r in runs if getattr(r, metric.size_key) == size]), metric.digits)
        for size in sizes
    }


def _value(metric: registry.Metric, run: Run) -> float | None:
    """One run's value of a `median` or `server_median` metric. The server's figures are
    untrusted numbers: only a finite value > 0 is one."""
    if metric.reduce == "median":
        return getattr(run, metric.run_field)
    value = positive_finite(run.server_timings.get(metric.server_field))
    return None if value is None else value * metric.server_scale


def _r(x: float | None, nd: int) -> float | None:
    return None if x is None else round(x, nd)


def _rk(key: str, x: float | None) -> float | None:
    """`x` rounded to the digits the registry gives metric `key`."""
    return _r(x, registry.digits(key))
