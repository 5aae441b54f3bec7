"""What the server itself said about a variant's runs: whose timings it gave, and its prefix cache.

Two checks behind a variant's `validity` (docs/design.md §4 "Trust"), each a pure function from
the runs to (figures, notes). Notes are one-line entries of the variant's `errors` that are not
causes (`VariantResult.note`); they say where a check could not look, so that a missing figure
is never silent:

- `server_timings`: how many measured runs carry the server's own timings. vLLM's come from
  `/metrics` deltas, which apply only when exactly one request finished between two scrapes;
  a run without them says why in `server_timings["source"]` ("n/a: ...", servers/protocols/vllm.py).
- `prefix_cache`: the prefix-cache hits of the measured runs, from the `/metrics` counters
  (`prefix_cache_hit_tokens`, vLLM) or the server's reported `cached_tokens` (usage, llama.cpp
  `timings`). A hit makes its run invalid (measure/timing.py `validate`, as for llama.cpp);
  a run where neither source said anything was not checked, and the variant says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from precmon.core import phases
from precmon.core.schema import Run
from precmon.measure.checks import positive_finite

#: Runs that are one request each and count as measurements (not warm-up, idle or concurrency).
MEASURED_PHASES = (phases.DECODE, phases.PREFILL, phases.TTFT, phases.LONG_CONTEXT_DECODE)
#: Any of these in `server_timings` is the server's own timing of the run.
TIMING_KEYS = ("predicted_per_second", "prompt_per_second", "prompt_ms", "ttft_ms", "decode_ms")
NOTE_TIMINGS = "server timings:"
NOTE_CACHE = "prefix-cache check blind"
METRICS_SOURCE = "/metrics (vllm:prefix_cache_hits_total deltas)"


def _measured(runs: Iterable[Run]) -> list[Run]:
    """Measured runs the server answered (a request that failed before any answer has nothing to check)."""
    return [r for r in runs if r.phase in MEASURED_PHASES and (r.ok or r.output_tokens is not None)]


def has_timings(run: Run) -> bool:
    return any(positive_finite(run.server_timings.get(k)) is not None for k in TIMING_KEYS)


def why_none(run: Run) -> str | None:
    """The adapter's reason a run has no server timings ("n/a: ..."), or None."""
    source = run.server_timings.get("source")
    return source if isinstance(source, str) and source.startswith("n/a:") else None


def server_timings(runs: Iterable[Run]) -> tuple[dict[str, Any], list[str]]:
    """How many valid measured runs carry the server's own timings, and why the others do not.

    A note when some runs lack them for a reason the adapter gave (vLLM's deltas did not apply):
    the client-vs-server check then rests on fewer runs, or on none.
    """
    measured = [r for r in _measured(runs) if r.ok]
    with_timings = sum(has_timings(r) for r in measured)
    reasons = Counter(w for r in measured if not has_timings(r) and (w := why_none(r)))
    figures: dict[str, Any] = {"measured_runs": len(measured), "runs_with_server_timings": with_timings}
    if reasons:
        figures["without"] = dict(reasons)
    notes = []
    if reasons:
        why = "; ".join(f"{text.removeprefix('n/a: ')} ({n}×)" for text, n in reasons.most_common(2))
        notes.append(
            f"{NOTE_TIMINGS} the server's own figures on {with_timings} of {len(measured)} measured runs; "
            f"without them: {why}"
        )
    return figures, notes


def prefix_cache(runs: Iterable[Run]) -> tuple[dict[str, Any], list[str]]:
    """Prefix-cache hits of the measured runs (valid or not: a hit is what makes one invalid).

    Figures: hit and query tokens summed over the runs, the runs with hits, and how the runs were
    checked (`checked`: "checked from /metrics ..." when the counters covered every run). A
    note when some runs were checked by neither the counters nor a reported `cached_tokens`.
    """
    measured = _measured(runs)
    from_metrics = [r for r in measured if isinstance(r.server_timings.get("prefix_cache_hit_tokens"), int)]
    from_usage = [r for r in measured if r not in from_metrics and r.cached_tokens is not None]
    blind = len(measured) - len(from_metrics) - len(from_usage)
    hits = [max(_int(r.server_timings.get("prefix_cache_hit_tokens")), r.cached_tokens or 0) for r in measured]
    figures: dict[str, Any] = {
        "measured_runs": len(measured),
        "checked_from_metrics": len(from_metrics),
        "checked_from_usage": len(from_usage),
        "unchecked": blind,
        "hit_tokens": sum(hits),
        "runs_with_hits": sum(h > 0 for h in hits),
    }
    if from_metrics:
        figures["query_tokens"] = sum(_int(r.server_timings.get("prefix_cache_query_tokens")) for r in from_metrics)
    figures["checked"] = _how(len(measured), len(from_metrics), len(from_usage), blind)
    notes = []
    if blind:
        notes.append(
            f"{NOTE_CACHE} on {blind} of {len(measured)} measured runs: the server reported no cached_tokens "
            "and /metrics gave no per-request counts (vLLM reports cached_tokens only with "
            "--enable-prompt-tokens-details): a run served from its prefix cache would pass as a fast one"
        )
    return figures, notes


def _how(n: int, metrics: int, usage: int, blind: int) -> str:
    if not n:
        return "n/a: no measured run"
    if metrics == n:
        return f"checked from {METRICS_SOURCE} on every measured run"
    if usage == n:
        return "checked from the cached_tokens the server reported on every measured run"
    if blind == n:
        return "blind: neither cached_tokens nor /metrics counts on any measured run"
    return f"checked from /metrics on {metrics}, from cached_tokens on {usage}, unchecked on {blind} of {n} runs"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
