"""Adaptive top-K (measure/quality/adaptive.py): the baseline lists per position the fewest tokens
holding 0.95 of its probability, a variant asks at each position as many as the baseline kept,
and vLLM's --max-logprobs caps the ask with a note naming the flag. Stub servers, no HTTP."""

from __future__ import annotations

import math
from typing import Any

import pytest

from precmon.measure.quality.adaptive import TOP_K_MAX, cut_to, kept, trim
from precmon.measure.quality.collect import PROMPT_LOGPROBS_MAX
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.score import Position
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import FROM_START
from precmon.servers.base import ServerError
from tests.fakes.quality_stub import answer


def FromStart(*args, **kwargs):  # noqa: N802 - a QualitySettings scoring from the text's start
    """The tests' short texts are scored from their start (the option for texts shorter than a window)."""
    return QualitySettings(*args, convention=FROM_START, **kwargs)


def pos(*probs: float) -> Position:
    return Position(tuple((i, math.log(p)) for i, p in enumerate(probs)), None)


@pytest.mark.parametrize(
    ("probs", "target", "k_min", "expected"),
    [
        ((0.5, 0.3, 0.15, 0.05), 0.95, 1, 3),  # 0.5 + 0.3 + 0.15 = 0.95: the edge counts as held
        ((0.5, 0.3, 0.1499, 0.05), 0.95, 1, 4),  # just under: one more
        ((0.96, 0.02, 0.01), 0.95, 2, 2),  # one would do, but never fewer than K
        ((0.2, 0.2, 0.2), 0.95, 1, 3),  # never reached: everything listed
    ],
)
def test_kept_is_the_fewest_tokens_holding_the_target(probs, target, k_min, expected):
    assert kept(pos(*probs), target, k_min) == expected


def test_trim_and_cut_to_keep_order_and_the_own_logprob():
    a = Position(((1, math.log(0.9)), (2, math.log(0.05)), (3, math.log(0.01))), -0.1)
    assert trim([a], 0.95, 1) == [Position(a.top[:2], -0.1)]
    assert cut_to([a, a], [1, 3]) == [Position(a.top[:1], -0.1), a]


class Peaked:
    """llama-server stub: the next-token distribution 0.5, 0.25, 0.125 … over as many tokens as asked."""

    kind, url = "llamacpp", "http://stub"

    def __init__(self, tokens: list[int], halve: float = 0.5) -> None:
        self.tokens, self.halve, self.asked = tokens, halve, []

    def tokenize(self, text: str, model: str | None = None) -> list[int]:
        return list(self.tokens)

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        k = payload["n_probs"]
        self.asked.append(k)
        top = [(t, math.log((1 - self.halve) * self.halve**t)) for t in range(min(k, 60))]
        return answer(top, payload["logit_bias"][0][0], -1.0)


def test_the_baseline_asks_for_many_and_keeps_what_holds_095_a_variant_asks_that_many():
    qs = FromStart(positions=3, top_k=2, text="t")
    srv = Peaked([5, 6, 7, 8])
    base = measure_quality(srv, qs, label="F16", model=None, reference=None)
    assert srv.asked == [TOP_K_MAX] * 3
    ref = base.reference
    assert ref is not None and [len(p.top) for p in ref.positions] == [5, 5, 5]  # 1 − 0.5⁵ = 0.969 ≥ 0.95
    assert base.info.top_k_listed_mean == 5.0 and base.info.topk_target_mass == 0.95
    var_srv = Peaked([5, 6, 7, 8], halve=0.6)
    var = measure_quality(var_srv, qs, label="Q4", model=None, reference=ref)
    assert var_srv.asked == [5, 5, 5]
    assert var.metrics["quality_kld_mean"] is not None and var.metrics["quality_kld_mean"] > 0


def test_adaptive_off_asks_exactly_k():
    srv = Peaked([5, 6, 7])
    out = measure_quality(srv, FromStart(2, 4, "t", target_mass=0.0), label="F16", model=None, reference=None)
    assert srv.asked == [4, 4] and out.reference is not None and len(out.reference.positions[0].top) == 4


class CappedVllm:
    """vLLM stub: refuses prompt_logprobs above `cap` with vLLM's own 400 message."""

    kind, url = "vllm", "http://stub"

    def __init__(self, tokens: list[int], cap: int) -> None:
        self.tokens, self.cap, self.asked = tokens, cap, []

    def tokenize(self, text: str, model: str | None = None) -> list[int]:
        return list(self.tokens)

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        k = payload["prompt_logprobs"]
        self.asked.append(k)
        if k > self.cap:
            raise ServerError(
                f"HTTP 400: Requested prompt logprobs of {k}, which is greater than max allowed: {self.cap}", 400
            )
        entry = {str(t): {"logprob": math.log(0.5 * 0.5**t), "rank": t + 1} for t in range(k)}
        return {"choices": [{"prompt_logprobs": [None] + [entry] * (len(payload["prompt"]) - 1)}]}


def test_vllm_caps_at_its_max_logprobs_and_the_note_names_the_flag():
    qs = FromStart(positions=3, top_k=2, text="t")
    srv = CappedVllm([1, 2, 3, 4], cap=20)
    out = measure_quality(srv, qs, label="bf16", model=None, reference=None)
    assert srv.asked == [PROMPT_LOGPROBS_MAX, 20]  # vLLM is asked at most precmon's own cap on it, then its own
    assert out.metrics["quality_kld_mean"] == 0.0
    assert any(f"--max-logprobs {PROMPT_LOGPROBS_MAX}" in n and "capped the top-K at 20" in n for n in out.info.notes)
    ref = out.reference
    assert ref is not None and {len(p.top) for p in ref.positions} == {5}


def test_vllm_refusing_without_its_limit_is_still_na_with_the_reason():
    class Silent(CappedVllm):
        def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
            raise ServerError("HTTP 400: max allowed", 400)

    out = measure_quality(Silent([1, 2, 3], 20), FromStart(2, 2, "t"), label="b", model=None, reference=None)
    assert out.metrics["quality_kld_mean"] is None and "--max-logprobs" in out.info.reason
