"""One measured request: send it, time it, validate it, and turn it into a `Run`.

Definitions (docs/design.md §4): TTFT = request sent → first chunk with generated text; prefill ms/token
= TTFT ÷ prompt tokens from the server's usage; decode tok/s = (completion_tokens − 1) ÷ (last
text chunk − first text chunk); ITL p50/p99 are gaps between text chunks (chunk latency, since a
chunk can carry several tokens). A run that fails validation is kept, with its reason, and
never enters a median.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.core.schema import Run, RunExtra
from precmon.core.stats import percentile
from precmon.measure.checks import impossible_derived
from precmon.measure.prompts import Prompt
from precmon.servers.base import Server, StreamRequest, StreamResult

# More tokens than any model's context: a count beyond this is a broken server, not a prompt.
MAX_TOKEN_COUNT = 2**31


def gaps_ms(times_s: Sequence[float]) -> list[float]:
    """Gaps between consecutive arrival times, in milliseconds."""
    return [(b - a) * 1000.0 for a, b in zip(times_s, times_s[1:], strict=False)]


def impossible_count(name: str, value: object) -> str | None:
    """Why a token count from the server cannot be real (negative, fractional, huge), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        return f"impossible {name} {value!r} from the server"
    return None


def validate(res: StreamResult, asked_tokens: int, cache_ok: bool = False) -> str | None:
    """The reason a request is not a valid measurement, or None.

    `cache_ok`: a context-depth request, whose prefix is meant to come from the cache; its cached
    count is checked by measure/depth/steps.py instead (cached == the depth, not 0).
    """
    if res.error:
        return res.error
    for name, count in (
        ("usage.prompt_tokens", res.prompt_tokens),
        ("usage.completion_tokens", res.completion_tokens),
        ("cached_tokens", res.cached_tokens),
    ):
        problem = impossible_count(name, count)
        if problem:
            return problem
    if res.first_text_s is None and not (res.completion_tokens and res.finish_s is not None):
        return "no generated text in the stream"
    if res.completion_tokens is None:
        return "server reported no usage.completion_tokens (cannot count tokens)"
    if res.completion_tokens != asked_tokens:
        return (
            f"completion_tokens {res.completion_tokens} != {asked_tokens} asked "
            f"(finish_reason {res.finish_reason!r}: early stop)"
        )
    if res.cached_tokens and not cache_ok:
        return f"prompt cache hit: {res.cached_tokens} prompt tokens served from cache"
    if not res.prompt_tokens:
        return "server reported no usage.prompt_tokens"
    return None


def decode_rate_tok_s(res: StreamResult) -> float | None:
    if res.completion_tokens is None or res.completion_tokens < 2:
        return None
    if res.first_text_s is None or res.last_text_s is None:
        return None
    span = res.last_text_s - res.first_text_s
    return (res.completion_tokens - 1) / span if span > 0 else None


def run_from_result(
    phase: str, res: StreamResult, prompt: Prompt, asked_tokens: int, repeat: int | None = None, cache_ok: bool = False
) -> Run:
    reason = validate(res, asked_tokens, cache_ok)
    counts_possible = reason is None or not reason.startswith("impossible")
    ttft = res.ttft_s
    extra = RunExtra(n_chunks=res.n_chunks, n_text_chunks=len(res.text_chunk_times_s))
    if ttft is None and reason is None and res.finish_s is not None:
        # A one-token answer whose token is an incomplete UTF-8 byte (byte-fallback vocabularies):
        # the server holds its text back and sends only the final chunk, right after generating it.
        ttft = res.finish_s - res.sent_s
        extra.ttft_from = "final chunk (the token had no printable text)"
    gaps = gaps_ms(res.text_chunk_times_s)
    prefill = (
        (ttft * 1000.0 / res.prompt_tokens) if (ttft is not None and res.prompt_tokens and counts_possible) else None
    )
    prompt_ms = res.server_timings.get("prompt_ms")
    if ttft is not None and isinstance(prompt_ms, (int, float)):
        # What the client waited beyond the server's own prompt processing: HTTP, tokenization,
        # queueing, llama-server's host prompt-cache save (--cache-ram), first-token sampling.
        extra.ttft_overhead_ms = round(ttft * 1000.0 - prompt_ms, 3)
    if res.first_content_s is not None:
        extra.ttfo_s = res.first_content_s - res.sent_s
    if prompt.expected_tokens is not None and res.prompt_tokens not in (None, prompt.expected_tokens):
        extra.prompt_tokens_mismatch = f"tokenizer said {prompt.expected_tokens}, usage {res.prompt_tokens}"
    derived: dict[str, Any] = {
        KEY.ttft_s: ttft,
        KEY.decode_tok_s: decode_rate_tok_s(res) if counts_possible else None,
        KEY.prefill_ms_per_token: prefill,
        KEY.itl_ms_p50: percentile(gaps, 50),
        KEY.itl_ms_p99: percentile(gaps, 99),
    }
    impossible = impossible_derived(derived)
    if impossible:  # never a metric: the value is dropped, the run is invalid and says why
        reason = reason or impossible
        derived = {k: (v if impossible_derived({k: v}) is None else None) for k, v in derived.items()}
    return Run(
        phase=phase,
        prompt_tokens=res.prompt_tokens if counts_possible else None,
        output_tokens=res.completion_tokens if counts_possible else None,
        **derived,
        cached_tokens=res.cached_tokens if counts_possible else None,
        server_timings=dict(res.server_timings),
        ok=reason is None,
        reason=reason,
        target_prompt_tokens=prompt.target_tokens,
        repeat=repeat,
        extra=extra,
    )


def measure_once(
    server: Server,
    phase: str,
    prompt: Prompt,
    max_tokens: int,
    model: str | None,
    timeout_s: float,
    repeat: int | None = None,
    endpoint: str = "completions",
    reuse_prefix: bool = False,
) -> tuple[Run, StreamResult]:
    """Send one request and return its validated Run (ServerError propagates).

    `endpoint` "chat" sends the prompt as one chat message (`StreamRequest.endpoint`); the prompt
    was built with the chat template's tokens counted in (`PromptBuilder.template_tokens`).
    `reuse_prefix`: a context-depth request (`StreamRequest.reuse_prefix`; its cache hit is not a
    reason by itself, measure/depth/steps.py checks it).
    """
    req = StreamRequest(
        prompt=prompt.text,
        max_tokens=max_tokens,
        model=model,
        nonce=prompt.nonce,
        timeout_s=timeout_s,
        endpoint=endpoint,
        reuse_prefix=reuse_prefix,
    )
    res = server.stream(req)
    return run_from_result(phase, res, prompt, max_tokens, repeat, reuse_prefix), res
