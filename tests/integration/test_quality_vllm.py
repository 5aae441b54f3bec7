"""Quality scoring on the real vLLM CPU test bed: bf16, W8A8-INT8 and AWQ-INT4 (docs/design.md §4).

Three server starts, one at a time (`--enforce-eager` to start faster): bf16 gives the reference
through `prompt_logprobs` and scores against itself (≈ 0), and the OpenAI `echo` + `logprobs`
fallback on the same server gives the same perplexity; then W8A8 (KL > 0) and AWQ (KL above
W8A8's, top-1 agreement lower). Run it under the shared lock, as every vLLM start:
`flock /work/wt/vllm.lock pytest tests/integration/test_quality_vllm.py`.
"""

from __future__ import annotations

import sys

import pytest

from precmon.measure.quality.run import QualityOutcome, QualitySettings, measure_quality
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.vllm import VLLMServer
from precmon.testbed.cpu_flags import cpu_flags, vllm_int4_ok
from tests.integration.test_vllm_testbed import OneServer, vllm_env, vllm_models  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

POSITIONS, TOP_K = 128, 20
SETTINGS = QualitySettings(positions=POSITIONS, top_k=TOP_K)
EAGER = ("--enforce-eager",)


def _say(label: str, out: QualityOutcome) -> None:
    m, info = out.metrics, out.info
    print(
        f"\n[quality vLLM] {label}: KLD mean {m['quality_kld_mean']} p99 {m['quality_kld_p99']} nats, "
        f"top-1 {m['quality_top1_agree']}, ppl {m['quality_ppl']} (baseline {info.get('baseline_ppl')}), "
        f"{info.get('seconds')} s, top-{TOP_K} mass {info.get('baseline_topk_mass')}",
        file=sys.stderr,
    )


@pytest.fixture(scope="module")
def scored(vllm_env, vllm_models, tmp_path_factory):  # noqa: F811 (fixtures imported above)
    servers = OneServer(vllm_env, vllm_models, tmp_path_factory.mktemp("vllm-quality"))
    out: dict[str, QualityOutcome] = {}
    try:
        proc = servers.get("bf16", EAGER)
        base = measure_quality(VLLMServer(proc.url), SETTINGS, label="bf16", model="tiny-bf16", reference=None)
        assert base.reference is not None, base.info
        out["bf16"] = base
        ref = base.reference
        out["bf16-again"] = measure_quality(VLLMServer(proc.url), SETTINGS, label="x", model="tiny-bf16", reference=ref)
        out["bf16-echo"] = measure_quality(
            OpenAIServer(proc.url), SETTINGS, label="e", model="tiny-bf16", reference=None
        )
        for name in ("w8a8-int8", "awq-int4"):
            proc = servers.get(name, EAGER)
            server = VLLMServer(proc.url)
            out[name] = measure_quality(server, SETTINGS, label=name, model=f"tiny-{name}", reference=ref)
    finally:
        servers.stop()
    for label, o in out.items():
        _say(label, o)
    return out


def test_the_baseline_against_itself_is_zero(scored):
    again = scored["bf16-again"].metrics
    assert again["quality_kld_mean"] is not None and again["quality_kld_mean"] < 1e-6
    assert again["quality_top1_agree"] == 1.0
    assert scored["bf16"].info["positions"] == POSITIONS and scored["bf16"].info["top_k"] == TOP_K


def test_the_echo_fallback_gives_the_same_perplexity_as_prompt_logprobs(scored):
    echo, base = scored["bf16-echo"], scored["bf16"]
    assert echo.info.get("reason") is None and echo.info["positions"] == POSITIONS
    assert echo.metrics["quality_ppl"] == pytest.approx(base.metrics["quality_ppl"], rel=1e-4)


def test_kl_rises_and_top1_agreement_falls_as_bits_fall(scored):
    w8, awq = scored["w8a8-int8"].metrics, scored["awq-int4"].metrics
    assert scored["w8a8-int8"].info.get("reason") is None, scored["w8a8-int8"].info
    if not vllm_int4_ok(cpu_flags()):  # vLLM's AVX2 kernels have no int4 GEMM: its engine dies, and we say so
        print(f"\nno AVX-512 here: AWQ int4 quality is n/a: {scored['awq-int4'].info.get('reason')}", file=sys.stderr)
        assert "HTTP 500" in scored["awq-int4"].info["reason"] and awq["quality_kld_mean"] is None
        assert 0 < w8["quality_kld_mean"] and w8["quality_top1_agree"] <= 1.0 and w8["quality_ppl"] is not None
        return
    assert scored["awq-int4"].info.get("reason") is None, scored["awq-int4"].info
    assert w8["quality_kld_mean"] > 0
    assert awq["quality_kld_mean"] > w8["quality_kld_mean"]
    assert awq["quality_top1_agree"] < w8["quality_top1_agree"] <= 1.0
    assert w8["quality_ppl"] is not None and awq["quality_ppl"] is not None
