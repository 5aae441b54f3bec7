"""One variant's context-depth runs, and their summary (the rules are measure/depth/steps.py's).

`run_depth` is one step of the bench plan per depth (fill, then every measured request at that
depth), so that an interleaved sweep never puts another variant's requests, or a model switch,
between a fill and the requests that reuse it. `summarize` adds what the registry's medians do
not make: the fill times, a null for every planned depth and size without a value, the
`validity.depth_cache` figures and the `depth-not-cached:` / `depth-cache-beyond-prefix:` warnings,
and `depth-baseline-mismatch:` when decode at d0 reads well below the plain decode (`validity.depth_baseline`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.core.phases import DECODE, DEPTH_DECODE, DEPTH_FILL, DEPTH_PREFILL
from precmon.core.schema import Run, VariantResult
from precmon.core.stats import median
from precmon.measure.depth.steps import (
    BASELINE,
    BASELINE_GAP_MAX,
    BEYOND,
    CODES,
    DEPTH_PHASES,
    NEW_DECODE_TOKENS,
    NOT_CACHED,
    NOTE_BLIND,
    DepthPlan,
    OneFn,
    checker,
    fill_checker,
    inner_builder,
    joined,
)
from precmon.measure.prompts import Prompt, PromptBuilder


def run_depth(
    one: OneFn,
    builder: PromptBuilder,
    plan: DepthPlan,
    depth: int,
    repeats: int,
    output_tokens: int,
    tolerance: tuple[int, int],
    empty: Callable[[], None] | None = None,
) -> None:
    """The runs at one depth, each handed to `one` (Bench._one) with its prompt and its check.

    `empty` empties the server's slots (a launched llama-server's, measure/depth/slots.py): at d0,
    where no prefix is kept, it runs between the requests, since each lands in another slot and
    the next attends over its cells (the d0 decode would read below the plain decode after the
    step's long prefills). At a depth > 0 the requests reuse the fill's slot,
    whose cells each new prompt cuts back to the prefix, so nothing piles up."""
    below, above = tolerance
    sizes = plan.prefill_sizes.get(depth, [])
    if depth == 0:  # llama-bench's d0: ordinary prompts, nothing cached
        check = checker(0, 0, below, above)
        requests = [(DEPTH_PREFILL, n, 1, i) for n in sizes for i in range(repeats)]
        size = NEW_DECODE_TOKENS + builder.template_tokens
        requests += [(DEPTH_DECODE, size, output_tokens, i) for i in range(repeats)]
        for k, (phase, n, out, i) in enumerate(requests):
            if k and empty is not None:  # the step began on empty slots
                empty()
            one(phase, n, out, i, check=check)
        return
    # Every prompt is made inside `one` (a function, not a Prompt): sizing it asks the server's
    # tokenizer, and a server gone by then leaves a failed run of that request, not an exception.
    made: list[Prompt] = []

    def make_prefix() -> Prompt:
        made.append(builder.build(depth))
        return made[-1]

    fill = one(DEPTH_FILL, depth, 1, 0, prompt=make_prefix, reuse_prefix=True, check=fill_checker(depth))
    if not made:  # the tokenizer refused the prefix (a 4xx): its failed run is recorded, nothing to reuse
        return
    prefix = made[-1]
    prefix_tokens = fill.prompt_tokens or prefix.expected_tokens or depth
    check = checker(depth, prefix_tokens, below, above)
    inner = inner_builder(builder, prefix)

    def after_prefix(new_tokens: int) -> Callable[[], Prompt]:
        return lambda: joined(builder, prefix, new_tokens, inner)

    for n in sizes:
        for i in range(repeats):
            one(DEPTH_PREFILL, n, 1, i, prompt=after_prefix(n), reuse_prefix=True, check=check)
    for i in range(repeats):
        prompt = after_prefix(NEW_DECODE_TOKENS)
        one(DEPTH_DECODE, NEW_DECODE_TOKENS, output_tokens, i, prompt=prompt, reuse_prefix=True, check=check)


def summarize(res: VariantResult, plan: DepthPlan) -> list[str]:
    """Fill times, planned nulls, figures and warnings into `res`; returns the notes (blind checks)."""
    runs = [r for r in res.runs if r.phase in DEPTH_PHASES and r.depth_tokens is not None]
    if not plan.depths and not runs:
        return []
    m = res.metrics
    fills: dict[Any, Any] = {
        r.depth_tokens: round(r.ttft_s * 1000.0, 2) for r in runs if _fill_ok(r) and r.ttft_s is not None
    }
    m[KEY.depth_fill_ms] = _sorted({d: fills.get(d) for d in plan.depths if d} | fills)
    decode = {int(k): v for k, v in (m.get(KEY.decode_tok_s_at_depth) or {}).items()}
    m[KEY.decode_tok_s_at_depth] = _sorted({d: None for d in plan.depths} | decode)
    grid = {int(k): v for k, v in (m.get(KEY.prefill_ms_per_token_at_depth) or {}).items()}
    for d in plan.depths:
        planned = {n: None for n in plan.prefill_sizes.get(d, [])}
        grid[d] = _sorted(planned | {int(k): v for k, v in (grid.get(d) or {}).items()})
    m[KEY.prefill_ms_per_token_at_depth] = _sorted({d: v for d, v in grid.items() if v})
    figures, warnings, blind = _cache_figures(runs)
    res.validity = res.validity or {}
    res.validity["depth_cache"] = figures
    res.validity["depth_baseline"], baseline = baseline_check(res.runs)
    warnings += baseline
    kept = [w for w in res.warnings or [] if not w.startswith(CODES)]
    res.warnings = kept + warnings
    measured = sum(len(f["cached_tokens"]) for f in figures.values())
    if not blind:
        return []
    return [
        f"{NOTE_BLIND} on {blind} of {measured} depth runs: the server reported no cached count (vLLM gives it "
        "with --enable-prompt-tokens-details, or per request from /metrics): a prefix that was not cached would pass"
    ]


def missing(metrics: dict[str, Any], plan: DepthPlan) -> bool:
    """A planned depth (or prefill size at a depth) without a value."""
    decode = metrics.get(KEY.decode_tok_s_at_depth) or {}
    grid = metrics.get(KEY.prefill_ms_per_token_at_depth) or {}
    for d in plan.depths:
        if decode.get(str(d)) is None:
            return True
        if any((grid.get(str(d)) or {}).get(str(n)) is None for n in plan.prefill_sizes.get(d, [])):
            return True
    return False


def baseline_check(runs: list[Run]) -> tuple[dict[str, Any], list[str]]:
    """(figures, warnings): the d0 depth decode's median against the plain decode's.

    Both are a short prompt and the same decode; a d0 figure far below the plain one means the
    depth step ran on a server whose KV cache held other data (llama.cpp's unified KV cache
    attends over every slot's cached cells), so the whole depth curve carries that cost."""
    plain = median([r.decode_tok_s for r in runs if r.phase == DECODE and r.ok and r.decode_tok_s])
    d0 = median(
        [r.decode_tok_s for r in runs if r.phase == DEPTH_DECODE and r.depth_tokens == 0 and r.ok and r.decode_tok_s]
    )
    if plain is None or d0 is None:
        return {"reason": "n/a: needs plain decode runs and decode runs at depth 0"}, []
    gap = round(d0 / plain - 1.0, 4)  # judged as recorded: a file never shows -0.15 with a warning
    figures = {
        KEY.decode_tok_s: round(plain, 2),
        "d0_decode_tok_s": round(d0, 2),
        "gap": gap,
        "gap_max": BASELINE_GAP_MAX,
    }
    if -gap <= BASELINE_GAP_MAX:
        return figures, []
    return figures, [
        f"{BASELINE} decode at d0 in the depth step {d0:.1f} tok/s is {-gap:.0%} below the plain decode "
        f"{plain:.1f} tok/s: the server's KV cache held other data during the depth runs (llama.cpp with a "
        "unified KV cache, -kvu, attends over every slot's cached cells); the depth curve is not comparable "
        "with llama-bench -d. Run depth with -np 1 or --no-kv-unified."
    ]


def _fill_ok(run: Run) -> bool:
    return run.phase == DEPTH_FILL and run.ok


def _sorted(values: dict[Any, Any]) -> dict[str, Any]:
    """{size: value} with int sizes, in size order, keyed as JSON keys are ("4096")."""
    return {str(k): values[k] for k in sorted(k for k in values if isinstance(k, int))}


def _cache_figures(runs: list[Run]) -> tuple[dict[str, Any], list[str], int]:
    """Per depth > 0: the measured runs' cached counts against the prefix; the warning lines; and
    how many runs the server gave no cached count for."""
    figures: dict[str, Any] = {}
    warnings: list[str] = []
    blind = 0
    for d in sorted({r.depth_tokens for r in runs if r.depth_tokens}):
        answered = [r for r in runs if r.depth_tokens == d and r.phase != DEPTH_FILL and r.prompt_tokens is not None]
        if not answered:
            continue
        expected = answered[0].extra.expected_cached
        below, above = answered[0].extra.cache_tolerance or (None, None)
        cached = [r.cached_tokens for r in answered]
        unchecked = sum(c is None for c in cached)
        blind += unchecked
        entry: dict[str, Any] = {"expected_cached": expected, "tolerance": [below, above], "cached_tokens": cached}
        for code, name in ((NOT_CACHED, "not_cached"), (BEYOND, "beyond_prefix")):
            bad = [r for r in answered if (r.reason or "").startswith(code)]
            entry[name] = len(bad)
            if bad:
                counts = sorted({r.cached_tokens for r in bad if r.cached_tokens is not None})
                shown = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
                what = "the prefix was not reused" if code == NOT_CACHED else "new tokens came from the cache"
                warnings.append(
                    f"{code} {len(bad)} of {len(answered)} runs at d{d} had {shown} cached prompt tokens, expected "
                    f"{expected} (-{below}/+{above}): {what}; those runs are excluded"
                )
        entry["unchecked"] = unchecked
        figures[str(d)] = entry
    return figures, warnings, blind
