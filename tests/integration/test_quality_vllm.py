"""Quality scoring on the real vLLM CPU test bed: SmolLM2-135M-Instruct (docs/design.md §4, docs/testbed-vllm.md).

The vLLM checkpoints are the test bed's SmolLM2 release dequantized by transformers' GGUF reader
and written by the project's own writer; llama-server serves the ladder's F16 (the same release
upcast by llama-quantize). First llama-server's F16 gives a reference (a few seconds, then it is
stopped); then four vLLM server starts, one at a time (`--enforce-eager` to start faster):
fp16, which must reproduce llama-server's F16 distribution (the same weights: the dequantization
and the Q/K un-permutation are right), then bf16, the vLLM baseline, through the adaptive top-K
(at most 50 tokens a position: collect.PROMPT_LOGPROBS_MAX, under the test bed's `--max-logprobs
1000`), scored against
itself (≈ 0) and by the OpenAI `echo` + `logprobs` fallback on the same server (the same
perplexity); then W8A8 int8 (KL > 0) and int4 in AWQ's format (KL above W8A8's, same top lower).
Run it under the shared lock, as every vLLM start:
`flock /work/wt/vllm.lock pytest tests/integration/test_quality_vllm.py`.
"""

from __future__ import annotations

import sys

import pytest

from precmon.measure.answer import ask
from precmon.measure.quality.collect import PROMPT_LOGPROBS_MAX
from precmon.measure.quality.run import QualityOutcome, measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import per_window
from precmon.servers.detect import make_server
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.vllm import VLLMServer
from precmon.testbed.cpu_flags import cpu_flags, vllm_int4_ok
from precmon.testbed.server import start_llama_server
from precmon.testbed.vllm_model import REAL
from tests.integration.test_vllm_testbed import OneServer, vllm_env, vllm_real_models  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

POSITIONS = per_window()  # the demo's: one llama-perplexity window
SETTINGS = QualitySettings(positions=POSITIONS)  # adaptive: 0.95 of the mass, vLLM asked PROMPT_LOGPROBS_MAX
EAGER = ("--enforce-eager",)


def _say(label: str, out: QualityOutcome) -> None:
    m, info = out.metrics, out.info
    print(
        f"\n[quality vLLM] {label}: KLD mean {m['quality_kld_mean']} ± {m['quality_kld_mean_err95']} "
        f"p99 {m['quality_kld_p99']} nats, same top {m['quality_top1_agree']}, ppl {m['quality_ppl']} "
        f"(baseline {info.baseline_ppl}), {info.seconds} s, top-{info.top_k} (listed {info.top_k_listed_mean}) "
        f"mass {info.baseline_topk_mass}, tail {info.kld_tail_nats} {info.notes or ''}",
        file=sys.stderr,
    )


def llama_f16_reference(build, ladder, logs):
    """llama-server's F16 of the same release: the reference a correct dequantization reproduces."""
    proc = start_llama_server(build.tool("llama-server"), logs / "llama-F16.log", model=ladder["F16"], ctx_tokens=2048)
    try:
        srv = make_server(proc.url)
        out = measure_quality(srv, SETTINGS, label="llama.cpp F16", model=None, reference=None)
        srv.close()
    finally:
        proc.stop()
    assert out.reference is not None, out.info
    return out


@pytest.fixture(scope="module")
def scored(vllm_env, vllm_real_models, llama_build, real_ladder, tmp_path_factory):  # noqa: F811 (fixtures imported above)
    logs = tmp_path_factory.mktemp("vllm-quality")
    out: dict[str, QualityOutcome] = {"llama-F16": llama_f16_reference(llama_build, real_ladder, logs)}
    servers = OneServer(vllm_env, vllm_real_models, logs, model=REAL)

    def score(variant: str, label: str, reference) -> QualityOutcome:
        proc = servers.get(variant, EAGER)
        return measure_quality(
            VLLMServer(proc.url), SETTINGS, label=label, model=REAL.variant(variant).served_name, reference=reference
        )

    try:
        out["fp16-vs-llama"] = score("fp16", "fp16", out["llama-F16"].reference)
        out["bf16-vs-llama"] = score("bf16", "bf16", out["llama-F16"].reference)
        base = out["bf16"] = score("bf16", "bf16", None)
        assert base.reference is not None, base.info
        out["bf16-again"] = score("bf16", "x", base.reference)
        bf16 = servers.get("bf16", EAGER)
        out["bf16-echo"] = measure_quality(
            OpenAIServer(bf16.url), SETTINGS, label="e", model=REAL.variant("bf16").served_name, reference=None
        )
        answer = ask(VLLMServer(bf16.url), REAL.variant("bf16").served_name)
        print(f"\n[answer vLLM bf16] {answer.text!r} ({answer.finish_reason})", file=sys.stderr)
        for name in ("w8a8-int8", "awq-int4"):
            out[name] = score(name, name, base.reference)
    finally:
        servers.stop()
    for label, o in out.items():
        _say(label, o)
    return out, answer.text or ""


def test_the_dequantized_checkpoint_reproduces_llama_servers_f16(scored):
    """The same weights on two engines, the same window: vLLM fp16 against llama-server's F16 (the
    baseline's lists cut to vLLM's at most 50 a position; measured from the text's start, before
    the windows: KL 1.9e-5 nats, same top 255 of 256); bf16 adds only its own rounding (then 9.0e-4
    nats, 95.7%)."""
    scored = scored[0]
    fp16, bf16 = scored["fp16-vs-llama"], scored["bf16-vs-llama"]
    assert fp16.info.reason is None and bf16.info.reason is None, (fp16.info, bf16.info)
    assert fp16.info.positions == POSITIONS  # the tokenizers agree on every id (else n/a with the place)
    assert fp16.metrics["quality_kld_mean"] < 1e-3 and fp16.metrics["quality_top1_agree"] >= 0.98, fp16.metrics
    assert fp16.metrics["quality_ppl_ratio"] == pytest.approx(1.0, abs=0.01)
    assert bf16.metrics["quality_kld_mean"] < 0.005 and bf16.metrics["quality_top1_agree"] >= 0.92, bf16.metrics


def test_the_baseline_lists_most_of_the_probability_and_against_itself_is_zero(scored):
    scored = scored[0]
    base = scored["bf16"].info
    assert base.positions == POSITIONS and base.top_k == PROMPT_LOGPROBS_MAX  # precmon's cap, not --max-logprobs
    assert not any("--max-logprobs" in n for n in base.notes or []), base
    assert base.baseline_topk_mass is not None and base.baseline_topk_mass > 0.8, base  # a real model (0.88 at 50)
    again = scored["bf16-again"].metrics
    assert again["quality_kld_mean"] is not None and again["quality_kld_mean"] < 1e-6
    assert again["quality_top1_agree"] == 1.0


def test_the_echo_fallback_gives_the_same_perplexity_as_prompt_logprobs(scored):
    scored = scored[0]
    echo, base = scored["bf16-echo"], scored["bf16"]
    assert echo.info.reason is None and echo.info.positions == POSITIONS
    assert echo.metrics["quality_ppl"] == pytest.approx(base.metrics["quality_ppl"], rel=1e-4)
    assert 10 < base.metrics["quality_ppl"] < 100  # real text on a real model (llama-server's F16: ~36)


def test_the_bf16_answer_is_about_the_question(scored):
    text = scored[1].lower()
    assert "sky" in text or "blue" in text or "light" in text, text


def test_kl_rises_and_same_top_falls_as_bits_fall(scored):
    scored = scored[0]
    w8, awq = scored["w8a8-int8"].metrics, scored["awq-int4"].metrics
    assert scored["w8a8-int8"].info.reason is None, scored["w8a8-int8"].info
    if not vllm_int4_ok(cpu_flags()):  # vLLM's AVX2 kernels have no int4 GEMM: its engine dies, and we say so
        print(f"\nno AVX-512 here: int4 quality is n/a: {scored['awq-int4'].info.reason}", file=sys.stderr)
        assert "HTTP 500" in scored["awq-int4"].info.reason and awq["quality_kld_mean"] is None
        assert 0 < w8["quality_kld_mean"] and w8["quality_top1_agree"] <= 1.0 and w8["quality_ppl"] is not None
        return
    assert scored["awq-int4"].info.reason is None, scored["awq-int4"].info
    assert w8["quality_kld_mean"] > 0
    assert (
        awq["quality_kld_mean"] > w8["quality_kld_mean"] + w8["quality_kld_mean_err95"] + awq["quality_kld_mean_err95"]
    )
    assert awq["quality_top1_agree"] < w8["quality_top1_agree"] <= 1.0
    assert w8["quality_ppl"] is not None and awq["quality_ppl"] is not None
