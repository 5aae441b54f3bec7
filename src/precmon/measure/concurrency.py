"""N simultaneous streams: aggregate tok/s, per-stream tok/s, TTFT with queueing."""

from __future__ import annotations

import threading
import time

from precmon.measure.prompts import PromptBuilder
from precmon.measure.results import Run
from precmon.measure.stats import median
from precmon.measure.timing import measure_once
from precmon.servers.base import Server, ServerError


def run_concurrency(
    server: Server,
    builder: PromptBuilder,
    streams: int,
    prompt_tokens: int,
    output_tokens: int,
    model: str | None,
    timeout_s: float,
    endpoint: str = "completions",
) -> Run:
    prompts = [builder.build(prompt_tokens) for _ in range(streams)]
    runs: list[Run | None] = [None] * streams
    errors: list[str] = []
    barrier = threading.Barrier(streams)

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            runs[i], _ = measure_once(server, "decode", prompts[i], output_tokens, model, timeout_s, i, endpoint)
        except (ServerError, threading.BrokenBarrierError) as exc:
            errors.append(str(exc))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall_s = time.perf_counter() - t0
    ok = [r for r in runs if r is not None and r.ok]
    reason = None
    if errors or len(ok) != streams:
        bad = [r.reason for r in runs if r is not None and not r.ok]
        reason = "; ".join((errors + [b for b in bad if b])[:3]) or "some streams failed"
    total = sum(r.output_tokens or 0 for r in ok)
    return Run(
        phase="concurrency",
        prompt_tokens=prompt_tokens,
        output_tokens=total,
        ttft_s=median([r.ttft_s for r in ok]),
        decode_tok_s=median([r.decode_tok_s for r in ok]),
        ok=reason is None,
        reason=reason,
        extra={
            "streams": streams,
            "wall_s": round(wall_s, 4),
            "aggregate_tok_s": round(total / wall_s, 2) if ok else None,
            "per_stream_tok_s": median([r.decode_tok_s for r in ok]),
            "ttft_s": median([r.ttft_s for r in ok]),
        },
    )
