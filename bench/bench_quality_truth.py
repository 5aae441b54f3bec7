"""Truth check of precmon's quality figures against `llama-perplexity --kl-divergence` (issues 29, 37).

On the real SmolLM2-135M-Instruct (F16 baseline; the ladder's Q8_0, Q4_0, NVFP4, MXFP4 and an
integer K-quant and an IQ quant made from the same F16: `precmon.testbed.real_model`), on a text
other than precmon's built-in one (`testbed.perplexity.truth_text`: Python's language reference),
at precmon's DEFAULTS: `measure_quality` with `QualitySettings(text=…)`, the measure path every
command takes, llama-perplexity's convention (512-token windows, each from its BOS, the second
half scored; as many as the default positions need), the adaptive top-K and the tail estimate.
llama-perplexity runs with `-c 512 --chunks N` on the same files and text, N = precmon's windows,
so both score the SAME positions. Goal: mean KL, its p99, same top and the PPL ratio within 10% of
llama-perplexity's. Prints a Markdown table (`--out FILE` writes it too). Not a test: ~10 minutes
on two shared cores.

    PYTHONPATH=src python bench/bench_quality_truth.py [--out FILE] [--positions N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from precmon.measure.quality.reference import Reference
from precmon.measure.quality.run import QualityOutcome, measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.servers.detect import make_server
from precmon.testbed.llama_build import build_llama
from precmon.testbed.perplexity import TRUTH_TOPICS, KldStats, build_perplexity, kl_divergence, truth_text
from precmon.testbed.real_model import make_extra, make_ladder
from precmon.testbed.server import start_llama_server

GOAL = 0.10  # each figure within 10% of llama-perplexity's


def scored(label: str, model: Path, work: Path, qs: QualitySettings, ref: Reference | None) -> QualityOutcome:
    """`measure_quality` through a llama-server of `model` (the baseline's when `ref` is None)."""
    build = build_llama("cpu")
    server = start_llama_server(build.tool("llama-server"), work / f"{label}.log", model=model, ctx_tokens=2048)
    try:
        srv = make_server(server.url)
        out = measure_quality(srv, qs, label=label, model=None, reference=ref)
        srv.close()
        return out
    finally:
        server.stop()


def _within(ours: float | None, theirs: float | None) -> bool:
    return ours is not None and theirs is not None and theirs > 0 and abs(ours / theirs - 1) <= GOAL


def row(label: str, out: QualityOutcome, lp: KldStats) -> str:
    m, q = out.metrics, out.info
    kld, p99, top1 = m["quality_kld_mean"] or 0.0, m["quality_kld_p99"] or 0.0, m["quality_top1_agree"] or 0.0
    ratio, listed = kld / lp.kld_mean, (kld - (q.kld_tail_nats or 0.0)) / lp.kld_mean
    ok = all(
        _within(a, b)
        for a, b in ((kld, lp.kld_mean), (p99, lp.kld_p99), (top1, lp.same_top), (m["quality_ppl_ratio"], lp.ppl_ratio))
    )
    return (
        f"| {label} | {kld:.4f} ± {m['quality_kld_mean_err95'] or 0:.4f} | {lp.kld_mean:.4f} ± {lp.kld_err95 or 0:.4f} "
        f"| **{ratio:.3f}×** | {listed:.3f}× | {p99:.3f} / {lp.kld_p99:.3f} ({p99 / lp.kld_p99:.2f}×) | "
        f"{m['quality_kld_max'] or 0:.3f} / {lp.kld_max or 0:.3f} | {top1:.1%} / {lp.same_top:.1%} "
        f"({(top1 - lp.same_top) * 100:+.1f} pt) | {m['quality_ppl_ratio'] or 0:.3f} / {lp.ppl_ratio or 0:.3f} | "
        f"{m['quality_rms_dp'] or 0:.2%} / {lp.rms_dp or 0:.2%} | {q.seconds:.0f} | {'meets' if ok else 'MISSES'} |"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--positions", type=int, default=QualitySettings().positions, help="default: precmon's")
    a = p.parse_args()
    build = build_llama("cpu")
    models = make_ladder(build) | make_extra(build)
    ppl_bin = build_perplexity(build)
    work = Path(tempfile.mkdtemp(prefix="precmon-quality-truth-"))
    text = work / "text.txt"
    text.write_text(truth_text(), encoding="utf-8")
    qs = QualitySettings(positions=a.positions, text=truth_text(), text_name=text.name)
    t0 = time.monotonic()
    base = scored("F16", models["F16"], work, qs, None)
    assert base.reference is not None, base.info.reason
    windows = base.info.windows or 1
    lines = [
        f"Text: Python's language reference ({', '.join(TRUTH_TOPICS)}), {windows} windows of 512, "
        f"{base.info.positions} positions (llama-perplexity `-c 512 --chunks {windows}`: the same); the baseline "
        f"listed {base.info.top_k_listed_mean} tokens a position on average, holding "
        f"{base.info.baseline_topk_mass:.3f} of the probability; baseline pass {time.monotonic() - t0:.0f} s.",
        "",
        "| variant | precmon KL ± 95% | llama-perplexity KL ± 95% | precmon ÷ l-p | listed tokens only ÷ l-p | "
        "KL p99 precmon / l-p | KL max precmon / l-p | same top precmon / l-p | PPL ratio precmon / l-p | "
        "RMS Δp precmon / l-p | precmon s | goal (10%) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label in (x for x in models if x != "F16"):
        out = scored(label, models[label], work, qs, base.reference)
        lp = kl_divergence(ppl_bin, models["F16"], models[label], text, work / "f16.kld", chunks=windows)
        lines.append(row(label, out, lp))
        print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
