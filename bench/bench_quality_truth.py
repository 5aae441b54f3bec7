"""Truth check of precmon's quality figures against `llama-perplexity --kl-divergence`.

On the synthetic tiny models (F16 baseline; Q8_0, Q4_K_M, Q2_K), the same built-in text:
- precmon through llama-server: P positions, top-K (the defaults, 512 and 20), as a sweep would;
- the same server path with K = the whole vocabulary on the first `--full-positions` positions:
  the exact KL on precmon's own positions, so the top-K approximation's cost is measured alone;
- llama-perplexity, offline from the GGUF files, over the whole vocabulary (its own positions: the
  second half of each 512-token chunk).
Prints a Markdown table (and writes it with `--out FILE`). Not a test: it takes minutes.

    PYTHONPATH=src python bench/bench_quality_truth.py --out docs/results/quality-truth/README.md
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from precmon.measure.quality.fetch import llamacpp_positions
from precmon.measure.quality.run import QualitySettings, measure_quality
from precmon.measure.quality.score import Position, score
from precmon.measure.quality.text import TEXT
from precmon.servers.detect import make_server
from precmon.testbed.llama_build import build_llama
from precmon.testbed.models import SHAPES, make_coarse_models, make_models
from precmon.testbed.perplexity import build_perplexity, kl_divergence
from precmon.testbed.server import start_llama_server

LABELS = ("F16", "Q8_0", "Q4_K_M", "Q2_K")


def exact_kl(base: Position, variant: Position) -> float:
    """KL over the whole vocabulary (both lists hold every token)."""
    q = dict(variant.top)
    return sum(math.exp(lp) * (lp - q[t]) for t, lp in base.top)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--positions", type=int, default=512)
    p.add_argument("--top-k", type=int, default=20)
    p.add_argument("--full-positions", type=int, default=32)
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    build = build_llama("cpu")
    models = dict(make_models("tiny", build=build)) | make_coarse_models("tiny", build=build)
    ppl_bin = build_perplexity(build)
    vocab = SHAPES["tiny"].n_vocab
    work = Path(tempfile.mkdtemp(prefix="precmon-quality-truth-"))
    text_file = work / "text.txt"
    text_file.write_text(TEXT, encoding="utf-8")
    qs = QualitySettings(a.positions, a.top_k)
    rows: dict[str, dict[str, float | None]] = {}
    ref = full_base = None
    for label in LABELS:
        server = start_llama_server(
            build.tool("llama-server"), work / f"{label}.log", model=models[label], ctx_tokens=2048
        )
        try:
            srv = make_server(server.url)
            t0 = time.monotonic()
            out = measure_quality(srv, qs, label=label, model=None, reference=ref)
            seconds = time.monotonic() - t0
            if ref is None:
                ref = out.reference
                out = measure_quality(srv, qs, label=label, model=None, reference=ref)
            assert ref is not None
            full = llamacpp_positions(srv, list(ref.tokens[: a.full_positions + 1]), vocab)
            full_base = full_base or full
            cut = [Position(f.top[: a.top_k], f.own_logprob) for f in full]
            cut_base = [Position(f.top[: a.top_k], f.own_logprob) for f in full_base]
            rows[label] = {
                "kld": out.metrics["quality_kld_mean"],
                "p99": out.metrics["quality_kld_p99"],
                "top1": out.metrics["quality_top1_agree"],
                "ppl": out.metrics["quality_ppl"],
                "seconds": seconds,
                "mass": out.info.get("baseline_topk_mass"),
                "full_kld": sum(exact_kl(b, v) for b, v in zip(full_base, full, strict=True)) / len(full),
                "cut_kld": score(cut_base, cut).kld_mean_nats,
            }
        finally:
            server.stop()
        if label != "F16":
            st = kl_divergence(ppl_bin, models["F16"], models[label], text_file, work / "f16.kld")
            rows[label] |= {"lp_kld": st.kld_mean, "lp_p99": st.kld_p99, "lp_top": st.same_top, "lp_n": st.positions}
        print(label, rows[label], flush=True)
    lines = [
        f"| variant | precmon KL (P={a.positions}, K={a.top_k}) | KL p99 | top-1 | ppl | "
        f"server full-vocab KL (P={a.full_positions}) | top-{a.top_k} KL on those | "
        "llama-perplexity KL | its p99 | same top | full ÷ top-K | llama-perplexity ÷ precmon | scoring s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, r in rows.items():
        lp = r.get("lp_kld")

        def g(x: float | None) -> str:
            return "" if x is None else f"{x:.3g}"

        ratio_full = (r["full_kld"] or 0) / r["cut_kld"] if r["cut_kld"] else None
        ratio_lp = lp / r["kld"] if lp and r["kld"] else None
        lines.append(
            f"| {label} | {g(r['kld'])} | {g(r['p99'])} | {g(r['top1'])} | {g(r['ppl'])} | {g(r['full_kld'])} | "
            f"{g(r['cut_kld'])} | {g(lp)} | {g(r.get('lp_p99'))} | {g(r.get('lp_top'))} | {g(ratio_full)} | "
            f"{g(ratio_lp)} | {r['seconds']:.1f} |"
        )
    mass = rows["Q8_0"]["mass"]
    lines.append("")
    lines.append(f"Mean probability held by the baseline's top-{a.top_k}: {mass}.")
    table = "\n".join(lines) + "\n"
    print(table)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
