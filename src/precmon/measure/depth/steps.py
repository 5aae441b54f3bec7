"""Context depth (llama-bench `-d`): prefill and decode measured with D tokens already in context.

At depth D one cache-fill request sends a D-token prefix (`max_tokens` 1): its TTFT is a cold
prefill at depth D (`depth_fill_ms`). The measured requests then send that prefix plus new
tokens: N new tokens for prefill (N from `prefill_tokens`), `NEW_DECODE_TOKENS` new ones before
`output_tokens` of decode. The prefix is *meant* to be served from the server's prompt cache and
only the new tokens may be uncached, so the check is the opposite of the timing runs': a depth
run is valid when the server's cached count is D (within the server's block size), and a run
whose prefix was not cached is excluded and flagged (`depth-not-cached:`). Depth 0 is the
ordinary no-cache request (cached must be 0, as for every timing run).

Prompts come from `PromptBuilder`: one prefix per depth with its own nonce, and new parts with
their own nonces, built against the server's tokenizer so that prefix + new counts exactly D + N.
The measured requests share the prefix's nonce as their cache salt (vLLM, SGLang) and llama.cpp
slot 0 (servers/protocols/llamacpp.py `DEPTH_SLOT`), docs/design.md §4 "Context depth".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from precmon.core import phases
from precmon.core.schema import Run
from precmon.measure.prompts import Prompt, PromptBuilder
from precmon.servers.kinds import capabilities

DEPTH_PHASES = (phases.DEPTH_FILL, phases.DEPTH_PREFILL, phases.DEPTH_DECODE)
#: New tokens before the decode at depth: room for a fresh nonce, nothing more (llama-bench's tg
#: at depth has none; a prompt that is all prefix would be one the cache serves whole).
NEW_DECODE_TOKENS = 16
#: Cached tokens a llama.cpp or vLLM count may differ from the prefix by: BOS and the opening
#: "[" of the next nonce match the previous prompt (measured on llama.cpp: cache_n = D + 1).
SLACK_TOKENS = 4
NOT_CACHED = "depth-not-cached:"
BEYOND = "depth-cache-beyond-prefix:"
BASELINE = "depth-baseline-mismatch:"
CODES = (NOT_CACHED, BEYOND, BASELINE)
#: How far the d0 depth decode's median may fall below the plain decode's before the depth curve
#: is flagged as not comparable with llama-bench `-d`. Both are the same request shape on the same
#: server (a short prompt, `output_tokens` of decode); quiet decode runs agree within 1-3% and a
#: spread of 10% already reads `noisy:` (validity.NOISY_CV), so two medians 15% apart are beyond the
#: noise of either; a unified KV cache full of other slots' cells reads a third to a half below
#: (measure/depth/slots.py).
BASELINE_GAP_MAX = 0.15
NOTE_BLIND = "depth cache check blind"

OneFn = Callable[..., Run]  # Bench._one(phase, size, max_tokens, repeat, prompt=, reuse_prefix=, check=)


@dataclass
class DepthPlan:
    """The depths that fit the server's context, and the prefill sizes that fit at each."""

    depths: list[int] = field(default_factory=list)
    prefill_sizes: dict[int, list[int]] = field(default_factory=dict)

    def requests(self, repeats: int) -> int:
        """Requests the plan makes: a fill per depth > 0, `repeats` per prefill size and for decode."""
        return sum((1 if d else 0) + repeats * (len(self.prefill_sizes[d]) + 1) for d in self.depths)


def plan_depths(
    depths: list[int], prefill_sizes: list[int], context_tokens: int | None, output_tokens: int
) -> tuple[DepthPlan, list[str]]:
    """(plan, notes): depths whose decode fits the context (D + new + output), and per depth the
    prefill sizes with D + N + 1 ≤ context; one note line for each kind of skip."""
    plan, notes = DepthPlan(), []
    ctx = context_tokens
    fits = [d for d in dict.fromkeys(depths) if not ctx or d + NEW_DECODE_TOKENS + output_tokens <= ctx]
    skipped = [d for d in dict.fromkeys(depths) if d not in fits]
    if skipped:
        notes.append(f"depth {', '.join(map(str, skipped))} skipped: beyond the server's context ({ctx} tokens)")
    cut: list[str] = []
    for d in sorted(fits):
        plan.depths.append(d)
        plan.prefill_sizes[d] = [n for n in prefill_sizes if not ctx or d + n + 1 <= ctx]
        cut += [f"{n} @ d{d}" for n in prefill_sizes if n not in plan.prefill_sizes[d]]
    if cut:
        notes.append(f"prefill {', '.join(cut)} skipped: beyond the server's context ({ctx} tokens)")
    return plan, notes


def tolerance(kind: str, flags: dict[str, Any], template_tokens: int = 0) -> tuple[int, int]:
    """(below, above): how far the cached count may fall short of or pass the prefix's tokens.

    Below: a server that caches whole blocks (the kind's record: vLLM's `block_size`, else 128)
    may keep up to a block less; a chat template's closing tokens follow the prefix in the fill
    (not in the measured prompt). Above: `SLACK_TOKENS` of the new part's opening that match the
    previous prompt.
    """
    block = capabilities(kind).prefix_block_tokens(flags)
    return block - 1 + SLACK_TOKENS + max(0, template_tokens), SLACK_TOKENS


def cache_problem(cached: int, prefix_tokens: int, below: int, above: int) -> str | None:
    """Why a depth run's cached count is not its prefix's (None when within the tolerance)."""
    want = f"expected {prefix_tokens} (-{below}/+{above})"
    if cached < prefix_tokens - below:
        return f"{NOT_CACHED} {cached} cached prompt tokens, {want}: the {prefix_tokens}-token prefix was not reused"
    if cached > prefix_tokens + above:
        return f"{BEYOND} {cached} cached prompt tokens, {want}: new tokens came from the cache"
    return None


def joined(builder: PromptBuilder, prefix: Prompt, new_tokens: int, inner: PromptBuilder | None = None) -> Prompt:
    """Prefix + a fresh new part of `new_tokens` tokens (by the server's tokenizer where there is
    one: the count of the joined text minus the prefix's). The prompt keeps the prefix's nonce (the
    cache salt); its target is `new_tokens`, its expected count the whole prompt's."""
    if inner is None:
        inner = inner_builder(builder, prefix)
    part = inner.build(new_tokens)
    expected = None
    if prefix.expected_tokens is not None and part.expected_tokens is not None:
        expected = prefix.expected_tokens + part.expected_tokens
    return Prompt(f"{prefix.text} {part.text}", prefix.nonce, new_tokens, expected)


def inner_builder(builder: PromptBuilder, prefix: Prompt) -> PromptBuilder:
    """A builder of new parts after `prefix`: it counts what a part adds to the prefix."""
    count = builder.count_tokens
    if count is None:
        return PromptBuilder(None, builder.tokens_per_word)
    base: list[int] = []  # the prefix's own count, asked for with the first part (inside Bench._one)

    def added(text: str) -> int:
        if not base:
            base.append(count(prefix.text))
        return count(f"{prefix.text} {text}") - base[0]

    return PromptBuilder(added)


def checker(depth: int, prefix_tokens: int, below: int, above: int) -> Callable[[Run], None]:
    """The check a depth run gets before it is recorded: its depth, then (depth > 0) its cached
    count against the prefix, and prefill ms/token over the tokens the server did not have cached."""

    def check(run: Run) -> None:
        run.depth_tokens = depth
        if depth == 0 or run.prompt_tokens is None:
            return  # depth 0: the ordinary no-cache request, validated as every timing run
        run.extra.expected_cached, run.extra.cache_tolerance = prefix_tokens, [below, above]
        cached = run.cached_tokens
        if cached is None:
            run.extra.depth_cache = "unchecked: the server reported no cached count"
        elif run.ok and (problem := cache_problem(cached, prefix_tokens, below, above)):
            run.ok, run.reason = False, problem
        new = run.prompt_tokens - (prefix_tokens if cached is None else cached)
        run.extra.new_tokens = new
        if run.phase == phases.DEPTH_PREFILL and run.ttft_s is not None and new > 0:
            run.prefill_ms_per_token = run.ttft_s * 1000.0 / new

    return check


def fill_checker(depth: int) -> Callable[[Run], None]:
    """The fill is a cold prefill: at most `SLACK_TOKENS` (BOS, the nonce's "[") from the cache."""

    def check(run: Run) -> None:
        run.depth_tokens = depth
        cached = run.cached_tokens
        if run.ok and cached is not None and cached > SLACK_TOKENS:
            run.ok = False
            run.reason = (
                f"prompt cache hit on the cache fill: {cached} tokens (a cold prefill has at most {SLACK_TOKENS})"
            )

    return check
