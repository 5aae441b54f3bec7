"""Pure readers of what the peers and the servers report, for the side-by-side benchmarks.

Each takes text or parsed JSON and returns plain numbers; tests/bench/test_peer_parse.py checks
them against literal samples of each tool's output (llama-server 0.3.36's log, llama-benchy
0.4.0's JSON report, `vllm bench serve` 0.32's result file, vLLM /metrics text).
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from precmon.report.importers.llama_benchy import benchy_requests  # noqa: E402,F401  (llama-benchy's one reader)
from precmon.servers.watch.metrics import snapshot_from_text  # noqa: E402

# llama-server's per-task timing lines ("slot print_timing: id  0 | task 142 | prompt eval time = ...")
_TIMING = re.compile(
    r"task (?P<task>\d+) \|\s+(?P<what>prompt eval|eval) time =\s+(?P<ms>[\d.]+) ms /\s+(?P<n>\d+) tokens"
    r"\s+\(\s*[\d.]+ ms per token,\s+(?P<rate>[\d.]+) tokens per second\)"
)


def llama_log_timings(text: str) -> list[dict[str, float]]:
    """llama-server's own timing of each finished request in a log slice, in log order.

    Returns dicts with prompt_n, prompt_ms, predicted_n, predicted_ms and predicted_per_second
    as llama.cpp prints it (the `timings` figure: (predicted_n - 1) / predicted_ms, the first
    token being the prompt eval's).
    """
    tasks: dict[str, dict[str, float]] = {}
    order: list[str] = []
    for m in _TIMING.finditer(text):
        task = m["task"]
        if task not in tasks:
            tasks[task] = {}
            order.append(task)
        kind = "prompt" if m["what"] == "prompt eval" else "predicted"
        tasks[task][f"{kind}_ms"] = float(m["ms"])
        tasks[task][f"{kind}_n"] = int(m["n"])
        tasks[task][f"{kind}_per_second"] = float(m["rate"])
    out = []
    for task in order:
        t = tasks[task]
        if "prompt_ms" in t and "predicted_ms" in t:
            out.append(t)
    return out


def decode_requests(timings: list[dict[str, float]], output_tokens: int) -> list[dict[str, float]]:
    """The requests that generated exactly `output_tokens` (warm-ups and 1-token probes dropped)."""
    return [t for t in timings if t["predicted_n"] == output_tokens]


def precmon_requests(results: dict[str, Any]) -> dict[str, Any]:
    """precmon's decode runs (decode tok/s, TTFT ms, the server timings it read) and its warnings."""
    variant = results["variants"][0]
    runs = [r for r in variant["runs"] if r.get("phase") == "decode" and r.get("ok")]
    st = [r.get("server_timings") or {} for r in runs]
    return {
        "decode_tok_s": [float(r["decode_tok_s"]) for r in runs],
        "ttft_ms": [float(r["ttft_s"]) * 1000.0 for r in runs],
        "itl_ms_p50": [float(r["itl_ms_p50"]) for r in runs if r.get("itl_ms_p50") is not None],
        "server_decode_tok_s": [float(s["predicted_per_second"]) for s in st if "predicted_per_second" in s],
        "server_ttft_ms": [float(s.get("ttft_ms", s.get("prompt_ms", math.nan))) for s in st],
        "server_decode_ms": [float(s["decode_ms"]) for s in st if "decode_ms" in s],
        "output_tokens": [int(r["output_tokens"]) for r in runs],
        "warnings": list(variant.get("warnings") or []),
        "host_cpu": (variant.get("validity") or {}).get("host_cpu") or {},
    }


def vllm_bench_result(result: dict[str, Any]) -> dict[str, Any]:
    """`vllm bench serve --save-result --save-detailed`: per-request TTFT/ITL and its means (ms)."""
    ttfts = [float(v) * 1000.0 for v in result.get("ttfts") or []]
    itls = [float(x) * 1000.0 for req in result.get("itls") or [] for x in req]
    return {
        "completed": int(result.get("completed", 0)),
        "output_lens": [int(n) for n in result.get("output_lens") or []],
        "ttft_ms": ttfts,
        "itl_ms": itls,
        "mean_ttft_ms": float(result.get("mean_ttft_ms", math.nan)),
        "mean_tpot_ms": float(result.get("mean_tpot_ms", math.nan)),
        "mean_itl_ms": float(result.get("mean_itl_ms", math.nan)),
        "median_itl_ms": float(result.get("median_itl_ms", math.nan)),
    }


# vLLM's ITL histogram was renamed; older builds call it time_per_output_token
VLLM_ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")


def vllm_metrics_delta(before: str, after: str, output_tokens: int) -> dict[str, float]:
    """vLLM's own figures for the requests that finished between two /metrics scrapes.

    Means over those requests (ms): TTFT, prefill, decode time and TPOT = decode time /
    (output_tokens - 1) (vLLM's decode time runs from the first token to the last), ITL from its
    per-token histogram; plus how many requests and prefix-cache hit tokens.
    """
    a = snapshot_from_text(before, "before", kind="vllm")
    b = snapshot_from_text(after, "after", kind="vllm")

    def hist(*names: str) -> tuple[float, float]:
        hb = b.histogram(*names)
        if hb is None:
            return (math.nan, 0.0)
        d = hb.minus(a.histogram(*names))
        return (d.sum, d.count)

    e2e_s, n = hist("vllm:e2e_request_latency_seconds")
    ttft_s, n_ttft = hist("vllm:time_to_first_token_seconds")
    prefill_s, _ = hist("vllm:request_prefill_time_seconds")
    decode_s, n_dec = hist("vllm:request_decode_time_seconds")
    itl_s, n_itl = hist(*VLLM_ITL)
    prompt_tokens, n_prompt = hist("vllm:request_prompt_tokens")
    hits_b = b.value("vllm:prefix_cache_hits_total")
    hits_a = a.value("vllm:prefix_cache_hits_total")

    def mean_ms(total_s: float, count: float) -> float:
        return total_s / count * 1000.0 if count > 0 else math.nan

    return {
        "requests": n,
        "ttft_ms": mean_ms(ttft_s, n_ttft),
        "prefill_ms": mean_ms(prefill_s, n),
        "decode_ms": mean_ms(decode_s, n_dec),
        "tpot_ms": mean_ms(decode_s, n_dec * (output_tokens - 1)) if output_tokens > 1 else math.nan,
        "itl_ms": mean_ms(itl_s, n_itl),
        "e2e_ms": mean_ms(e2e_s, n),
        "prompt_tokens": prompt_tokens / n_prompt if n_prompt > 0 else math.nan,
        "prefix_cache_hits": (hits_b - hits_a) if hits_a is not None and hits_b is not None else math.nan,
    }
