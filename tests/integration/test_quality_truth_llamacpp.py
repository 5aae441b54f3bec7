"""Truth check (docs/design.md §4 "Quality"): precmon's KL through llama-server against
`llama-perplexity --kl-divergence` on the same text and models.

The order must agree (Q8_0 < Q4_K_M, for KL and for top-1 the other way round); with the whole
vocabulary through the server the KL must be within 3× of llama-perplexity's (measured 0.63× here on
12 positions against its 889 at -c 256; 1.1–1.4× on 32 positions against -c 512 in
docs/results/quality-truth: other positions of the same text); the top-K figure must lie below
the full one (the rest bucket only merges).
"""

from __future__ import annotations

import math

import pytest

from precmon.measure.quality.fetch import llamacpp_positions
from precmon.measure.quality.run import QualitySettings, measure_quality
from precmon.measure.quality.score import Position, score
from precmon.measure.quality.text import TEXT
from precmon.servers.detect import make_server
from precmon.testbed.models import SHAPES
from precmon.testbed.perplexity import build_perplexity, kl_divergence
from precmon.testbed.server import start_llama_server

pytestmark = pytest.mark.integration

FULL_POSITIONS = 12


def exact_kl(base: Position, variant: Position) -> float:
    q = dict(variant.top)
    return sum(math.exp(lp) * (lp - q[t]) for t, lp in base.top)


@pytest.fixture(scope="module")
def server_side(llama_build, tiny_models, tmp_path_factory):
    """Per model: precmon's score (P=64, K=20) and the first positions with the whole vocabulary."""
    log_dir = tmp_path_factory.mktemp("truth")
    out, ref, full_base = {}, None, None
    for label in ("F16", "Q8_0", "Q4_K_M"):
        proc = start_llama_server(
            llama_build.tool("llama-server"), log_dir / f"{label}.log", model=tiny_models[label], ctx_tokens=1024
        )
        try:
            srv = make_server(proc.url)
            q = measure_quality(srv, QualitySettings(64, 20), label=label, model=None, reference=ref)
            ref = ref or q.reference
            assert ref is not None
            full = llamacpp_positions(srv, list(ref.tokens[: FULL_POSITIONS + 1]), SHAPES["tiny"].n_vocab)
            srv.close()
        finally:
            proc.stop()
        full_base = full_base or full
        cut = score([Position(p.top[:20]) for p in full_base], [Position(p.top[:20]) for p in full]).kld_mean_nats
        exact = sum(exact_kl(b, v) for b, v in zip(full_base, full, strict=True)) / len(full)
        out[label] = (q.metrics, exact, cut)
    return out


@pytest.fixture(scope="module")
def offline(llama_build, tiny_models, tmp_path_factory):
    binary = build_perplexity(llama_build)
    work = tmp_path_factory.mktemp("perplexity")
    text = work / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    base = work / "f16.kld"
    return {
        q: kl_divergence(binary, tiny_models["F16"], tiny_models[q], text, base, ctx_tokens=256)
        for q in ("Q8_0", "Q4_K_M")
    }


def test_order_agrees_with_llama_perplexity(server_side, offline):
    (q8, _, _), (q4, _, _) = server_side["Q8_0"], server_side["Q4_K_M"]
    assert 0 < q8["quality_kld_mean"] < q4["quality_kld_mean"]
    assert 0 < offline["Q8_0"].kld_mean < offline["Q4_K_M"].kld_mean
    assert q8["quality_top1_agree"] > q4["quality_top1_agree"]
    assert offline["Q8_0"].same_top > offline["Q4_K_M"].same_top


def test_the_whole_vocabulary_through_the_server_matches_llama_perplexity(server_side, offline):
    _, exact, cut = server_side["Q4_K_M"]
    assert 1 / 3 < exact / offline["Q4_K_M"].kld_mean < 3.0, (exact, offline["Q4_K_M"])
    assert cut < exact  # the top-K + rest bucket can only lower KL
    print(
        f"\n[truth] Q4_K_M KL: full vocab through the server {exact:.3g}, top-20 {cut:.3g}, "
        f"llama-perplexity {offline['Q4_K_M'].kld_mean:.3g} ({offline['Q4_K_M'].positions} positions)"
    )
