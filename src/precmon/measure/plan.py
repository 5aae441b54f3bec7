"""The bench plan, pure: which requests a variant gets, from its settings and what its server
said about itself (context size, depths that fit), and what the variant is called.

Nothing here sends a request or reads a clock: `measure/bench.py` runs the steps, and
`measure/summary.py` turns the runs into the variant's numbers. Phase names come from
`precmon.core.phases`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from precmon.core import phases, registry
from precmon.core.cells import stats_key
from precmon.core.phases import CONCURRENCY, DECODE, LONG_CONTEXT_DECODE, PREFILL, TTFT, WARMUP
from precmon.core.stats import describe, relative_half_width
from precmon.measure.depth.steps import DepthPlan, plan_depths
from precmon.servers.base import ModelInfo

#: A TTFT prompt shorter than this measures the HTTP round trip more than the prompt (the plan's
#: smallest prefill size, 128 with --quick, is far above it).
MIN_TTFT_TOKENS = 16
DEPTH = "depth"  # a plan step (one per depth: its fill, prefill and decode runs), never a run's phase


class Stopped(Exception):
    """The user asked to stop; what was measured so far is kept. Raised between the steps of the
    plan (by measure/bench.py); here so that a caller stepping through a plan (an interleaved
    sweep) catches it without importing the executor."""


@dataclass(frozen=True)
class Step:
    """One request of the plan; for phase "concurrency", `size` is the stream count."""

    phase: str
    size: int  # prompt tokens asked for (streams, for concurrency)
    max_tokens: int
    repeat: int


@dataclass(frozen=True)
class Sizes:
    """The sizes of a plan that fit the server's context (`plan_sizes`), and what was left out.

    Attributes:
        notes: one line per size or depth skipped, in the order the plan meets them.
        skipped_prefill: prefill sizes beyond the context (their metric keys stay, null).
        skipped_ttft: the TTFT size asked for, when it is beyond the context (`ttft` is then the
            largest prompt that fits, when one does).
    """

    prefill: tuple[int, ...] = ()
    ttft: int | None = None
    long_context: tuple[int, ...] = ()
    depth: DepthPlan = field(default_factory=DepthPlan)
    notes: tuple[str, ...] = ()
    skipped_prefill: tuple[int, ...] = ()
    skipped_ttft: int | None = None


def variant_label(label: str | None, model: str | None, info: ModelInfo | None) -> str:
    """The one rule naming a variant (docs/design.md §3 `--label`): the user's label, else the
    model asked for, else the server's quantization name, else its model file's name, else
    "server". Every front end gets its label here (through `Bench`)."""
    if label:
        return label
    if model:
        return model
    if info is not None and (info.quantization or info.name):
        return info.quantization or info.name.rsplit("/", 1)[-1].removesuffix(".gguf")
    return "server"


def clip_sizes(sizes: list[int], context_tokens: int | None, output_tokens: int) -> tuple[list[int], list[int]]:
    """(kept, skipped): prompt sizes that fit the server's context with room for the output."""
    if not context_tokens:
        return list(sizes), []
    kept = [s for s in sizes if s + output_tokens <= context_tokens]
    return kept, [s for s in sizes if s not in kept]


def clip_ttft(ttft_tokens: int | None, ctx: int | None) -> tuple[int | None, int | None]:
    """(the TTFT size measured, the size asked for when it did not fit). TTFT is one size, so one
    beyond the context is measured at the largest prompt that fits with its first token (ctx − 1,
    the prefill sizes' rule), not left n/a; a context too small for any prompt skips it."""
    if not ttft_tokens or not ctx or ttft_tokens + 1 <= ctx:
        return ttft_tokens, None
    largest = ctx - 1
    return (largest if largest >= MIN_TTFT_TOKENS else None), ttft_tokens


def plan_sizes(
    prefill_tokens: list[int],
    ttft_tokens: int | None,
    long_context_tokens: list[int],
    depth: list[int],
    output_tokens: int,
    ctx: int | None,
) -> Sizes:
    """The sizes that fit a context of `ctx` tokens (None: unknown, all of them)."""
    notes: list[str] = []
    prefill, skipped = clip_sizes(list(prefill_tokens), ctx, 1)
    notes += [f"prefill {size} skipped: beyond the server's context ({ctx} tokens)" for size in skipped]
    ttft, skipped_ttft = clip_ttft(ttft_tokens, ctx)
    if skipped_ttft and ttft:
        notes.append(
            f"ttft {skipped_ttft} beyond the server's context ({ctx} tokens): measured at {ttft} tokens, "
            "the largest prompt that fits"
        )
    elif skipped_ttft:
        notes.append(f"ttft {skipped_ttft} skipped: beyond the server's context ({ctx} tokens)")
    long, skipped_long = clip_sizes(list(long_context_tokens), ctx, output_tokens)
    notes += [f"long-context decode {size} skipped: beyond the context ({ctx})" for size in skipped_long]
    depth_plan, depth_notes = plan_depths(list(depth), list(prefill_tokens), ctx, output_tokens)
    return Sizes(
        tuple(prefill), ttft, tuple(long), depth_plan, tuple(notes + depth_notes), tuple(skipped), skipped_ttft
    )


def plan_steps(
    warmup: int,
    repeats: int,
    decode_prompt_tokens: int,
    output_tokens: int,
    sizes: Sizes,
    concurrency: list[int],
) -> list[Step]:
    """The requests of the plan, in the order they are made (after idle power)."""
    steps = [Step(WARMUP, decode_prompt_tokens, output_tokens, i) for i in range(warmup)]
    steps += [Step(DECODE, decode_prompt_tokens, output_tokens, i) for i in range(repeats)]
    for size in sizes.prefill:
        steps += [Step(PREFILL, size, 1, i) for i in range(repeats)]
    if sizes.ttft:
        steps += [Step(TTFT, sizes.ttft, 1, i) for i in range(repeats)]
    for size in sizes.long_context:
        steps += [Step(LONG_CONTEXT_DECODE, size, output_tokens, i) for i in range(repeats)]
    steps += [Step(DEPTH, d, output_tokens, 0) for d in sizes.depth.depths]  # one step per depth
    # Levels take turns (1, 4, 1, 4, ...): a load that comes and goes touches every level alike.
    return steps + [Step(CONCURRENCY, n, output_tokens, i) for i in range(repeats) for n in concurrency]


def repeats_key(phase: str, size: int) -> str:
    """The key of a phase and size in `repeats_stopped_by` / `repeats_n`: the `metrics_stats` key
    (core/cells.py `stats_key`) of the metric whose 95% CI decides the phase's repeats (the median
    of its `phases.TARGET_FIELD`), "ttft_s:8192"; a phase whose metric has one size is named by
    the phase itself ("decode"), as results files have always said."""
    field = phases.TARGET_FIELD[phase]
    metric = next(m for m in registry.metrics() if m.reduce == "median" and m.phase == phase and m.run_field == field)
    return phase if metric.shape == "scalar" else stats_key(metric, str(size))


def enough_repeats(
    values: list[float | None], repeats: int, target_ci_pct: float | None, max_repeats: int
) -> str | None:
    """Whether a phase and size has run enough (adaptive repeats, `target_ci_pct`): None for
    one more run, else what stopped it: "planned" (`repeats` runs, no target), "target_ci"
    (the 95% CI half-width of its headline values is within the target), "max_repeats"."""
    if len(values) < repeats:
        return None
    if target_ci_pct is None:
        return "planned"
    rel = relative_half_width(describe(values))
    if rel is not None and rel * 100.0 <= target_ci_pct:
        return "target_ci"
    return "max_repeats" if len(values) >= max(repeats, max_repeats) else None


def request_count(warmup: int, repeats: int, sizes: Sizes, concurrency: list[int]) -> int:
    """How many requests the plan makes (the progress bar's total, before adaptive repeats)."""
    per_repeat = 1 + len(sizes.prefill) + (1 if sizes.ttft else 0) + len(sizes.long_context) + len(concurrency)
    return warmup + repeats * per_repeat + sizes.depth.requests(repeats)
