"""Truth check of precmon's quality figures against `llama-perplexity --kl-divergence` (issue 29).

On the real SmolLM2-135M-Instruct ladder (F16 baseline; Q8_0, Q4_0, NVFP4, MXFP4: precmon's test
bed, `precmon.testbed.real_model`), on precmon's built-in evaluation text, on the SAME positions:
llama-perplexity with `-c 512 --chunks 1` scores the second half of the first 512-token chunk
(positions 256 … 510, each given the text from its start), and precmon asks llama-server for
exactly those positions (`llamacpp_positions(start=256)`), through the measure path's own
adaptive top-K (`measure/quality/adaptive.py`: the baseline lists up to 1000 tokens and keeps the
fewest holding 0.95; a variant asks that many at each position), then scores them with
`measure/quality/score.py`. The fixed top-20 figure is the same lists cut to 20 (what llama-server
gives for `n_probs: 20`). Goal: mean KL within 15% of llama-perplexity's and top-1 within 2
points on every variant with KL > 0.005. Prints a Markdown table (`--out FILE` writes it too).
Not a test: a few minutes on two shared cores.

    PYTHONPATH=src python bench/bench_quality_truth.py [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from precmon.measure.quality.adaptive import TARGET_MASS, TOP_K_MAX, cut_to, trim
from precmon.measure.quality.fetch import llamacpp_positions
from precmon.measure.quality.score import Position, QualityScore, score
from precmon.measure.quality.text import TEXT
from precmon.servers.detect import make_server
from precmon.testbed.llama_build import build_llama
from precmon.testbed.perplexity import KldStats, build_perplexity, kl_divergence
from precmon.testbed.real_model import make_ladder
from precmon.testbed.server import start_llama_server

CTX = 512  # llama-perplexity's chunk; it scores the chunk's second half
FIRST = CTX // 2
FIXED_K = 20
GOAL_RATIO, GOAL_TOP1_PT, GOAL_MIN_KLD = 0.15, 2.0, 0.005


def fetch(label: str, model: Path, work: Path, sizes: list[int] | None) -> tuple[list[int], list[Position], float]:
    """(token ids, positions FIRST … CTX−2, seconds) from a llama-server of `model`."""
    build = build_llama("cpu")
    server = start_llama_server(build.tool("llama-server"), work / f"{label}.log", model=model, ctx_tokens=2048)
    try:
        srv = make_server(server.url)
        tokens = srv.tokenize(TEXT, None) or []
        t0 = time.monotonic()
        pos = llamacpp_positions(srv, tokens[:CTX], sizes or TOP_K_MAX, start=FIRST)  # type: ignore[arg-type]
        return tokens, pos, time.monotonic() - t0
    finally:
        server.stop()


def _cut(positions: list[Position], k: int) -> list[Position]:
    return [Position(p.top[:k], p.own_logprob) for p in positions]


def row(label: str, s: QualityScore, fixed: QualityScore, lp: KldStats, seconds: float) -> str:
    ratio, fixed_ratio = s.kld_mean_nats / lp.kld_mean, fixed.kld_mean_nats / lp.kld_mean
    top_pt = (s.top1_agree - lp.same_top) * 100
    judged = lp.kld_mean > GOAL_MIN_KLD
    ok = abs(1 - ratio) <= GOAL_RATIO and abs(top_pt) <= GOAL_TOP1_PT
    verdict = ("meets" if ok else "MISSES") if judged else "n/a (KL ≤ 0.005)"
    return (
        f"| {label} | {s.kld_mean_nats:.4f} ± {s.kld_err95_nats:.4f} | {lp.kld_mean:.4f} ± {lp.kld_err95 or 0:.4f} | "
        f"**{ratio:.3f}×** | {fixed_ratio:.3f}× | {s.kld_p99_nats:.3f} / {lp.kld_p99:.3f} | "
        f"{s.kld_max_nats:.3f} / {lp.kld_max or 0:.3f} | {s.top1_agree:.1%} ± {s.top1_err95:.1%} / {lp.same_top:.1%} "
        f"({top_pt:+.1f} pt) | {s.ppl_ratio or 0:.3f} / {lp.ppl_ratio or 0:.3f} | {s.rms_dp or 0:.2%} / "
        f"{lp.rms_dp or 0:.2%} | {seconds:.0f} | {verdict} |"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    build = build_llama("cpu")
    models = make_ladder(build)
    ppl_bin = build_perplexity(build)
    work = Path(tempfile.mkdtemp(prefix="precmon-quality-truth-"))
    text = work / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    _, raw_base, base_s = fetch("F16", models["F16"], work, None)
    base = trim(raw_base, TARGET_MASS, FIXED_K)
    sizes = [len(b.top) for b in base]
    lines = [
        f"Positions {FIRST}-{CTX - 2} of the built-in text ({len(base)} positions, the same for both tools); "
        f"baseline F16 listed {sum(sizes) / len(sizes):.0f} tokens a position on average (median "
        f"{sorted(sizes)[len(sizes) // 2]}), holding {score(base, base).base_topk_mass:.3f} of the probability "
        f"(top-{FIXED_K}: {score(_cut(base, FIXED_K), _cut(base, FIXED_K)).base_topk_mass:.3f}); "
        f"baseline pass {base_s:.0f} s.",
        "",
        "| variant | precmon KL ± 95% (adaptive) | llama-perplexity KL ± 95% | precmon ÷ llama-perplexity | "
        f"same at fixed top-{FIXED_K} | KL p99 precmon / l-p | KL max precmon / l-p | same top precmon / l-p | "
        "PPL ratio precmon / l-p | RMS Δp precmon / l-p | precmon s | goal |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label in (x for x in models if x != "F16"):
        _, raw, seconds = fetch(label, models[label], work, sizes)
        var = cut_to(raw, sizes)
        s, fixed = score(base, var), score(_cut(base, FIXED_K), _cut(var, FIXED_K))
        lp = kl_divergence(ppl_bin, models["F16"], models[label], text, work / "f16.kld", ctx_tokens=CTX, chunks=1)
        lines.append(row(label, s, fixed, lp, seconds))
        print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
