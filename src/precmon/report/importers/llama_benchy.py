"""llama-benchy's JSON report read as precmon columns for `precmon compare`.

A report (an object with `benchmarks` holding `pp_throughput`/`tg_throughput`) becomes a results
document with one variant (its model): per-request `tg_req_throughput` → decode runs (its decode
rate is tokens after the first / (last − first token time), precmon's definition),
`pp_req_throughput` → prefill runs at its prompt size, `e2e_ttft` (request start → first content,
precmon's TTFT) → TTFT at that size. Only depth-0 (`context_size` 0), single-user entries are
read; others are warned about. A rate of 0 tok/s (or a TTFT of 0) is no measurement: such a
request is an invalid run with its reason, and a report with nothing else is a failed column.
"""

from __future__ import annotations

from typing import Any

from precmon.core import phases
from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc, Run, ServerInfo, VariantResult
from precmon.report.importers.peer_doc import MIN_RATE_TOK_S, Reader, document, medians, prefill_run


def is_benchy(doc: Any) -> bool:
    """llama-benchy's report: `benchmarks`, each with pp/tg throughput objects."""
    if not isinstance(doc, dict) or "schema" in doc or not isinstance(doc.get("benchmarks"), list):
        return False
    runs = doc["benchmarks"]
    keys = ("tg_throughput", "pp_throughput", "tg_req_throughput", "pp_req_throughput")
    return bool(runs) and all(isinstance(b, dict) and any(k in b for k in keys) for b in runs)


def benchy_requests(report: dict[str, Any]) -> dict[str, list[float]]:
    """Per-request decode tok/s and end-to-end TTFT (ms) of llama-benchy's first benchmark.

    llama-benchy's decode rate is (tokens after the first) / (last token time - first token
    time), the same definition as precmon's; its e2e_ttft is request start -> first content
    chunk, the same as precmon's TTFT (its `ttft` subtracts a /models round trip; not used).
    """
    bench = report["benchmarks"][0]
    return {
        KEY.decode_tok_s: [float(v) for v in (bench.get("tg_req_throughput") or {}).get("values", [])],
        "ttft_ms": [float(v) for v in (bench.get("e2e_ttft") or {}).get("values", [])],
    }


ZERO = "llama-benchy reported 0 tok/s (or a TTFT of 0): no tokens were timed, not a measurement"


def _zero(phase: str) -> Run:
    return Run(phase, ok=False, reason=ZERO)


def _decode(out_tokens: int | None, tok_s: float) -> Run:
    if tok_s < MIN_RATE_TOK_S:
        return _zero(phases.DECODE)
    return Run(phases.DECODE, output_tokens=out_tokens, decode_tok_s=tok_s)


def from_benchy(report: dict[str, Any], name: str) -> ResultsDoc:
    """llama-benchy's JSON report as a results document: one variant (its model)."""
    r = Reader(name)
    runs: list[Run] = []
    warnings: list[str] = []
    sizes: list[int] = []
    for i, b in enumerate(report["benchmarks"]):
        path = f"benchmarks[{i}]"
        prompt, depth = r.count(b, "prompt_size", path), r.count(b, "context_size", path)
        users = r.count(b, "concurrency", path) if "concurrency" in b else 1
        if depth or users != 1:
            warnings.append(f"llama-benchy pp{prompt} @ d{depth}, {users} users: no precmon row; left out")
            continue
        part: dict[str, list[float]] = {}
        for key in ("tg_req_throughput", "pp_req_throughput", "e2e_ttft"):
            entry = b.get(key)
            if entry is not None and not isinstance(entry, dict):
                raise r.fail(f"{path}.{key}", "an object", entry)
            part[key] = r.values(entry or {}, "values", f"{path}.{key}")
        out_tokens = r.count(b, "response_size", path) or None
        runs += [_decode(out_tokens, x) for x in part["tg_req_throughput"]]
        if prompt:
            sizes.append(prompt)
            runs += [
                prefill_run(prompt, x) if x >= MIN_RATE_TOK_S else _zero(phases.PREFILL)
                for x in part["pp_req_throughput"]
            ]
            runs += [
                Run(phases.TTFT, target_prompt_tokens=prompt, ttft_s=ms / 1000.0) if ms > 0 else _zero(phases.TTFT)
                for ms in part["e2e_ttft"]
            ]
    model = r.text(report, "model") or "?"
    valid = [x for x in runs if x.ok]
    errors = [] if valid else [ZERO if runs else "no single-user, depth-0 benchmark in the report"]
    variant = VariantResult(
        label=f"llama-benchy {model}",
        model=model,
        server=ServerInfo(kind="llama-benchy", version=r.text(report, "version") or None),
        status="ok" if valid else "failed",
        errors=errors,
        warnings=warnings,
        runs=runs,
        metrics=medians(valid),
    )
    return document("", r.text(report, "timestamp"), [variant], sizes, name)
