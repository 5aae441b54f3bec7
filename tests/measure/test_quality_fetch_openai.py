"""vLLM `prompt_logprobs` and the OpenAI `echo` + `logprobs` fallback, over HTTP against scripted
servers that answer with shapes recorded from the real vLLM 0.32 CPU test bed (tests/fakes/shapes;
the live server is tests/integration/test_quality_vllm.py)."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from precmon.measure.quality.fetch import QualityUnavailable
from precmon.measure.quality.fetch_openai import (
    echo_positions,
    parse_echo,
    parse_prompt_logprobs,
    text_token_id,
    vllm_positions,
)
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import FROM_START
from precmon.servers.base import ServerError
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.wire_servers import Scripted, ScriptedServer

SHAPES = Path(__file__).parent.parent / "fakes" / "shapes"
PROMPT_LOGPROBS = json.loads((SHAPES / "vllm_prompt_logprobs_k3.json").read_text())
ECHO = json.loads((SHAPES / "vllm_echo_logprobs_k3.json").read_text())
TOKENS = [1, 450, 8580, 393, 6057, 1549]  # what the test bed's /tokenize gave for the recorded text
TOO_MANY = {
    "error": {
        "message": "Requested prompt logprobs of 30, which is greater than max allowed: 20 "
        "(parameter=prompt_logprobs, value=30)",
        "type": "BadRequestError",
        "param": "prompt_logprobs",
        "code": 400,
    }
}


def FromStart(*args, **kwargs):  # noqa: N802 - a QualitySettings scoring from the text's start
    """The tests' short texts are scored from their start (the option for texts shorter than a window)."""
    return QualitySettings(*args, convention=FROM_START, **kwargs)


def test_prompt_logprobs_gives_the_top_k_and_the_own_token_even_below_rank_k():
    positions = parse_prompt_logprobs(PROMPT_LOGPROBS, TOKENS, top_k=3)
    assert len(positions) == 5
    first = positions[0]
    assert [t for t, _ in first.top] == [15597, 17665, 9138]  # ranks 1-3; the own token 450 ranks 17767
    assert first.own_logprob == pytest.approx(-10.46969985961914)


def test_prompt_logprobs_refuses_an_answer_that_does_not_cover_every_prompt_token():
    with pytest.raises(ServerError, match="6 prompt_logprobs entries for 7 prompt tokens"):
        parse_prompt_logprobs(PROMPT_LOGPROBS, [*TOKENS[:5], 7, 8], top_k=3)
    with pytest.raises(ServerError, match="0 prompt_logprobs entries"):
        parse_prompt_logprobs({"choices": [{"text": "x"}]}, TOKENS, top_k=3)


def test_prompt_logprobs_skips_hostile_entries_and_refuses_a_position_without_any():
    body = copy.deepcopy(PROMPT_LOGPROBS)
    entries = body["choices"][0]["prompt_logprobs"]
    entries[1] = {"x": {"logprob": -1.0}, "7": {"logprob": "nan"}, "8": {"logprob": 5.0}, "9": {"logprob": -2.0}}
    assert parse_prompt_logprobs(body, TOKENS, 3)[0].top == ((9, -2.0),)
    entries[1] = {"x": {"logprob": -1.0}}
    with pytest.raises(ServerError, match=r"prompt_logprobs\[1\]"):
        parse_prompt_logprobs(body, TOKENS, 3)


def test_one_vllm_request_sends_the_token_ids_and_k():
    routes = {"POST /v1/completions": Scripted(body=PROMPT_LOGPROBS)}
    with ScriptedServer(routes) as fake:
        positions = vllm_positions(VLLMServer(fake.url), TOKENS, 3, model="tiny-bf16")
        sent = json.loads(fake.requests[0][2])
    assert len(fake.requests) == 1 and len(positions) == 5
    assert sent["prompt"] == TOKENS and sent["prompt_logprobs"] == 3 and sent["max_tokens"] == 1
    assert sent["temperature"] == 0.0 and sent["stream"] is False and sent["model"] == "tiny-bf16"


def test_k_above_vllms_max_logprobs_is_na_naming_the_flag():
    routes = {"POST /v1/completions": Scripted(400, TOO_MANY)}
    with ScriptedServer(routes) as fake, pytest.raises(QualityUnavailable, match="--max-logprobs 30"):
        vllm_positions(VLLMServer(fake.url), TOKENS, 30)


def test_echo_reads_text_named_tokens_and_drops_the_generated_one():
    ids, positions = parse_echo(ECHO, top_k=3)
    assert ids == [text_token_id(t) for t in ["<s>", " The", " river", " that", " runs", " through"]]
    assert len(positions) == 5
    assert [t for t, _ in positions[0].top] == [text_token_id(t) for t in ["They", " sondern", " finding"]]
    assert positions[0].own_logprob == pytest.approx(-10.46969985961914)


def test_echo_reads_vllms_token_id_names_as_ids():
    body = copy.deepcopy(ECHO)
    lists = body["choices"][0]["logprobs"]
    lists["tokens"] = [f"token_id:{t}" for t in [*TOKENS, 5]]
    lists["top_logprobs"][1] = {"token_id:15597": -9.1, "token_id:450": -10.4}
    ids, positions = parse_echo(body, top_k=3)
    assert ids == TOKENS and positions[0].top == ((15597, -9.1), (450, -10.4))


@pytest.mark.parametrize("status", [400, 404, 422])
def test_a_server_that_refuses_echo_is_na_with_its_answer(status):
    routes = {"POST /v1/completions": Scripted(status, {"error": "echo is not supported"})}
    with ScriptedServer(routes) as fake, pytest.raises(QualityUnavailable, match="refused echo . logprobs"):
        echo_positions(OpenAIServer(fake.url), "text", 4, 3)


def test_echo_answer_without_prompt_lists_is_a_server_error():
    body: dict[str, Any] = {"choices": [{"text": "x", "logprobs": {"tokens": ["x"], "token_logprobs": []}}]}
    with pytest.raises(ServerError, match="echo gave no logprobs"):
        parse_echo(body, 3)


def test_a_generic_openai_server_is_scored_by_echo_and_a_variant_against_it():
    text = "The river that runs through"
    settings = FromStart(positions=4, top_k=3, text=text)
    routes = {"POST /v1/completions": Scripted(body=ECHO)}
    with ScriptedServer(routes) as fake:
        base = measure_quality(OpenAIServer(fake.url), settings, label="bf16", model="m", reference=None)
        assert base.reference is not None and base.info.reason is None
        other = measure_quality(OpenAIServer(fake.url), settings, label="b", model="m", reference=base.reference)
        sent = json.loads(fake.requests[0][2])
    assert sent["echo"] is True and sent["logprobs"] == 3 and sent["prompt"] == text
    assert base.info.positions == 4 and len(base.reference.tokens) == 5
    assert other.metrics["quality_kld_mean"] == 0.0 and other.metrics["quality_top1_agree"] == 1.0
    assert other.metrics["quality_ppl"] is not None


def test_vllm_variant_with_another_tokenization_is_na_before_asking_for_distributions():
    settings = FromStart(positions=5, top_k=3, text="The river that runs through")
    routes = {
        "POST /tokenize": Scripted(body={"tokens": TOKENS}),
        "POST /v1/completions": Scripted(body=PROMPT_LOGPROBS),
    }
    with ScriptedServer(routes) as fake:
        base = measure_quality(VLLMServer(fake.url), settings, label="bf16", model="m", reference=None)
        assert base.reference is not None and base.info.positions == 5
        fake.routes["POST /tokenize"] = Scripted(body={"tokens": [1, 450, 9, 393, 6057, 1549]})
        other = measure_quality(VLLMServer(fake.url), settings, label="awq", model="m", reference=base.reference)
        asked = [p for _, p, _, _ in fake.requests]
    assert other.info.reason == "the tokenizer differs from the baseline's at token 2"
    assert asked.count("/v1/completions") == 1  # only the baseline's


def test_vllm_too_large_k_reaches_the_results_as_the_reason():
    settings = FromStart(positions=5, top_k=30, text="The river that runs through")
    routes = {"POST /tokenize": Scripted(body={"tokens": TOKENS}), "POST /v1/completions": Scripted(400, TOO_MANY)}
    with ScriptedServer(routes) as fake:
        out = measure_quality(VLLMServer(fake.url), settings, label="bf16", model="m", reference=None)
    assert out.metrics["quality_kld_mean"] is None
    assert "above its --max-logprobs (default 20)" in out.info.reason


def test_a_stop_before_the_one_request_is_a_stopped_outcome_without_asking():
    stop = threading.Event()
    stop.set()
    routes = {"POST /v1/completions": Scripted(body=ECHO)}
    with ScriptedServer(routes) as fake:
        out = measure_quality(
            OpenAIServer(fake.url), FromStart(4, 3, "x y"), label="a", model=None, reference=None, stop=stop
        )
    assert out.info.reason.startswith("stopped by user") and fake.requests == []
