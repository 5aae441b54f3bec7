"""N simultaneous streams, one window per level (docs/design.md §4 "Concurrency").

One concurrency run is one window: N requests released together, from the first request sent to
the last token received. It records what a user of the server feels (each stream's decode tok/s
and TTFT) and what the server delivers (all tokens ÷ the window), so the curve over the levels
shows the trade between the two. Token counts are the server's usage, as `measure_once` takes
them; the window's energy is the power meter's phase window around it (`PhaseMeter`,
measure/request.py), ÷ all of the window's tokens.
"""

from __future__ import annotations

import threading
from typing import Protocol

from precmon.core.phases import CONCURRENCY, DECODE
from precmon.core.schema import Run, RunExtra
from precmon.core.stats import median, percentile
from precmon.measure.concurrency.check import RunningWatch
from precmon.measure.prompts import PromptBuilder
from precmon.measure.request import PhaseMeter
from precmon.measure.timing import measure_once
from precmon.servers.base import Server, ServerError, StreamResult

BARRIER_TIMEOUT_S = 30.0


class LevelPlan(Protocol):
    """The plan settings a level reads (`BenchSettings` has them)."""

    decode_prompt_tokens: int
    output_tokens: int
    timeout_s: float
    endpoint: str


def run_concurrency(
    server: Server,
    builder: PromptBuilder,
    streams: int,
    prompt_tokens: int,
    output_tokens: int,
    model: str | None,
    timeout_s: float,
    endpoint: str = "completions",
    repeat: int = 0,
    watch: RunningWatch | None = None,
    power: PhaseMeter | None = None,
) -> Run:
    """`streams` requests released together by a barrier; the level's `Run` (phase "concurrency").

    Args:
        watch: polls the server's running-requests gauge through the window (what it ran at
            once, for the `concurrency-queued:` check); None leaves it out.
        power: the level's power window (the whole level: its prompts, first request sent →
            last token) goes into the run, and its energy ÷ its tokens (`add_energy`).
    """
    power = power or PhaseMeter(None)
    power.begin(CONCURRENCY)
    try:
        prompts = [builder.build(prompt_tokens) for _ in range(streams)]
    except ServerError as exc:  # the server's tokenizer sizes the prompts: gone or refusing, the level failed
        run = level_run(streams, prompt_tokens, [], [str(exc)], repeat)
        power.end_into(CONCURRENCY, run)
        add_energy(run)
        return run
    results: list[tuple[Run, StreamResult] | None] = [None] * streams
    errors: list[str] = []
    barrier = threading.Barrier(streams)

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=BARRIER_TIMEOUT_S)
            results[i] = measure_once(server, DECODE, prompts[i], output_tokens, model, timeout_s, i, endpoint)
        except (ServerError, threading.BrokenBarrierError) as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(streams)]
    if watch is not None:
        watch.start()
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        observed = watch.stop() if watch is not None else None
    run = level_run(streams, prompt_tokens, [r for r in results if r is not None], errors, repeat)
    if observed is not None:
        run.extra.server_parallel = observed
    power.end_into(CONCURRENCY, run)
    add_energy(run)
    return run


def level(
    server: Server,
    builder: PromptBuilder,
    plan: LevelPlan,
    model: str | None,
    slots: object,
    streams: int,
    repeat: int,
    power: PhaseMeter,
) -> Run:
    """One level of the bench plan: `streams` streams of the plan's decode shape, the server's
    running-requests gauge watched (`slots`: its parallel slots where it says, llama.cpp /props)."""
    watch = RunningWatch(server.url, server.kind, model, slots if isinstance(slots, int) else None)
    return run_concurrency(
        server,
        builder,
        streams,
        plan.decode_prompt_tokens,
        plan.output_tokens,
        model,
        plan.timeout_s,
        plan.endpoint,
        repeat,
        watch,
        power,
    )


def level_run(
    streams: int,
    prompt_tokens: int,
    results: list[tuple[Run, StreamResult]],
    errors: list[str],
    repeat: int = 0,
) -> Run:
    """The level's figures from its streams' runs and stream results (pure: unit-tested).

    The window runs from the first request sent to the last text chunk of any stream; a level
    with a failed stream is invalid (its figures would describe fewer users than asked for).
    """
    ok = [(r, s) for r, s in results if r.ok]
    reason = None
    if errors or len(ok) != streams:
        bad = [r.reason for r, _ in results if not r.ok and r.reason]
        reason = "; ".join((errors + bad)[:3]) or "some streams failed"
    starts = [s.sent_s for _, s in results]
    ends = [end for _, s in ok if (end := s.last_text_s if s.last_text_s is not None else s.finish_s) is not None]
    window_s = max(ends) - min(starts) if starts and ends else None
    total = sum(r.output_tokens or 0 for r, _ in ok)
    rates = [r.decode_tok_s for r, _ in ok if r.decode_tok_s is not None]
    ttfts = [r.ttft_s for r, _ in ok if r.ttft_s is not None]
    total_tok_s = total / window_s if ok and window_s and window_s > 0 else None
    return Run(
        phase=CONCURRENCY,
        prompt_tokens=prompt_tokens,
        output_tokens=total,
        ttft_s=percentile(ttfts, 50),
        decode_tok_s=median(rates),
        ok=reason is None,
        reason=reason,
        repeat=repeat,
        extra=RunExtra(
            streams=streams,
            wall_s=_r(window_s, 4),
            total_tok_s=_r(total_tok_s, 2),
            per_user_tok_s=_r(median(rates), 2),
            per_user_tok_s_min=_r(min(rates, default=None), 2),
            per_user_tok_s_max=_r(max(rates, default=None), 2),
            ttft_p50_s=_r(percentile(ttfts, 50), 4),
            ttft_p99_s=_r(percentile(ttfts, 99), 4),
            stream_decode_tok_s=[round(x, 2) for x in rates],
            stream_ttft_s=[round(x, 4) for x in ttfts],
        ),
    )


def add_energy(run: Run) -> None:
    """`extra.energy_j_per_token`: the whole window's energy ÷ all of its tokens (the server's
    usage counts), where the meter gave the window an energy."""
    if run.energy_j is not None and run.output_tokens and run.ok:
        run.extra.energy_j_per_token = round(run.energy_j / run.output_tokens, 5)


def _r(x: float | None, nd: int) -> float | None:
    return None if x is None else round(x, nd)
