"""Truth check on the real model at precmon's defaults (docs/design.md §4 "Quality"): precmon's
figures through llama-server against `llama-perplexity --kl-divergence` (the whole vocabulary,
offline) on the same files and text, as bench/bench_quality_truth.py measures them (docs/benchmarks.md).

`measure_quality` runs as every command runs it, at the defaults (`QualitySettings()` but the
text): llama-perplexity's convention, as many 512-token windows as the default positions need,
the adaptive top-K, the tail estimate. llama-perplexity runs with `-c 512 --chunks N`, N = the
windows precmon scored, so both score the same positions. The text is not the built-in one
(testbed/perplexity.py `truth_text`), and the variants are of four types: an integer K-quant
(Q5_K_M), an IQ quant (IQ4_NL), NVFP4 and MXFP4. Mean KL, its p99, same top and the PPL ratio
must each be within 10% of llama-perplexity's. Then llama-perplexity's own base file of the F16
(`--kl-divergence-base`, as `bench --quality-ref` reads it) scores MXFP4 too, within the same 10%.
A long test: every position is one request (~30 minutes on two busy cores).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from precmon.measure.quality.reference import load_reference
from precmon.measure.quality.run import QualityOutcome, measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import LLAMA_PERPLEXITY, per_window
from precmon.servers.detect import make_server
from precmon.testbed.perplexity import KldStats, build_perplexity, kl_divergence, truth_text
from precmon.testbed.real_model import make_extra
from precmon.testbed.server import start_llama_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]

VARIANTS = ("Q5_K_M", "IQ4_NL", "NVFP4", "MXFP4")
GOAL = 0.10


def _serve(build, model: Path, log: Path, score) -> list[QualityOutcome]:
    proc = start_llama_server(build.tool("llama-server"), log, model=model, ctx_tokens=2048)
    try:
        srv = make_server(proc.url)
        out = score(srv)
        srv.close()
        return out
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def truth(llama_build, real_ladder, tmp_path_factory):
    work = tmp_path_factory.mktemp("truth")
    models = dict(real_ladder) | make_extra(llama_build)
    text = work / "text.txt"
    text.write_text(truth_text(), encoding="utf-8")
    qs = QualitySettings(text=truth_text(), text_name=text.name)
    binary = build_perplexity(llama_build)
    (base,) = _serve(
        llama_build,
        models["F16"],
        work / "F16.log",
        lambda s: [measure_quality(s, qs, label="F16", model=None, reference=None)],
    )
    assert base.reference is not None, base.info
    windows = base.info.windows or 0
    out: dict[str, tuple[QualityOutcome, KldStats]] = {}
    for label in VARIANTS:
        offline = kl_divergence(binary, models["F16"], models[label], text, work / "f16.kld", chunks=windows)
        refs = [base.reference] + ([load_reference(work / "f16.kld")] if label == "MXFP4" else [])
        got = _serve(
            llama_build,
            models[label],
            work / f"{label}.log",
            lambda s, refs=refs, label=label: [
                measure_quality(s, qs, label=label, model=None, reference=r) for r in refs
            ],
        )
        out[label] = (got[0], offline)
        if len(got) > 1:
            out[f"{label} vs the base file"] = (got[1], offline)
    for label, (o, lp) in out.items():
        m = o.metrics
        print(
            f"\n[truth] {label}: KL {m['quality_kld_mean']} vs {lp.kld_mean:.4f} (tail {o.info.kld_tail_nats}), "
            f"p99 {m['quality_kld_p99']} vs {lp.kld_p99:.4f}, same top {m['quality_top1_agree']} vs {lp.same_top:.4f}, "
            f"PPL ratio {m['quality_ppl_ratio']} vs {lp.ppl_ratio}, {o.info.seconds} s",
            file=sys.stderr,
        )
    return base, out


def test_the_defaults_score_llama_perplexitys_positions(truth):
    base, out = truth
    q = base.info
    assert q.convention == LLAMA_PERPLEXITY and q.window_tokens == 512
    assert q.windows == 2 and q.positions == 2 * per_window()  # 510 positions are 2 windows; the text has 8
    for o, offline in out.values():
        assert o.info.reason is None and o.info.positions == offline.positions == q.positions, o.info


@pytest.mark.parametrize("label", [*VARIANTS, "MXFP4 vs the base file"])
def test_mean_kl_p99_same_top_and_ppl_ratio_within_10_percent(truth, label):
    o, lp = truth[1][label]
    m = o.metrics
    for ours, theirs in (
        (m["quality_kld_mean"], lp.kld_mean),
        (m["quality_kld_p99"], lp.kld_p99),
        (m["quality_top1_agree"], lp.same_top),
        (m["quality_ppl_ratio"], lp.ppl_ratio),
    ):
        assert ours is not None and theirs, (label, m, lp)
        assert abs(ours / theirs - 1) <= GOAL, (label, ours, theirs)


def test_the_order_agrees_with_llama_perplexity(truth):
    _, out = truth
    ours = sorted(VARIANTS, key=lambda v: out[v][0].metrics["quality_kld_mean"] or 0.0)
    theirs = sorted(VARIANTS, key=lambda v: out[v][1].kld_mean)
    assert ours == theirs
