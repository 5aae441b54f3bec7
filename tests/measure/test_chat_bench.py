"""A bench on the chat endpoint: the chat template's tokens are measured once and counted in, so
every prompt hits its size by usage.prompt_tokens (docs/design.md §4 "Chat endpoint"), and the
results say which endpoint was measured."""

from __future__ import annotations

import json

import pytest

from precmon.cli.common import settings_from_args
from precmon.cli.parser import build_parser
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.prompts import PromptBuilder, PromptError
from precmon.servers.detect import make_server
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import SpecError, parse_spec
from tests.fakes.timed_server import Behaviour, TimedServer


def words_plus_bos(text: str) -> int:
    return len(text.split()) + 1


def test_builder_makes_the_content_shorter_by_the_template():
    b = PromptBuilder(words_plus_bos)
    b.template_tokens = 7
    p = b.build(64)
    assert words_plus_bos(p.text) == 64 - 7
    assert (p.target_tokens, p.expected_tokens) == (64, 64)
    assert p.text.startswith(f"[{p.nonce}] ")  # the nonce still opens the content


def test_builder_refuses_a_chat_prompt_smaller_than_its_template():
    b = PromptBuilder(words_plus_bos)
    b.template_tokens = 30
    with pytest.raises(PromptError, match="the chat template alone takes 30 tokens"):
        b.build(31)


def test_a_bare_nonce_has_no_trailing_space():
    # in a chat template the space before the template's suffix counted one token more than alone
    b = PromptBuilder(None)
    assert b._text("ab12", ["x"], 0, 0) == "[ab12]"
    assert b._text("ab12", ["x", "y"], 2, 1) == "[ab12] x y ."


PLAN = dict(output_tokens=8, decode_prompt_tokens=24, prefill_tokens=[64], ttft_tokens=48, repeats=2, idle_s=0)


def test_chat_bench_hits_every_prompt_size_by_usage():
    behaviour = Behaviour(itl_s=0.001, chat_template_tokens=9, role_first=True)
    with TimedServer(behaviour) as srv:
        res = Bench(make_server(srv.url), BenchSettings(**PLAN, endpoint="chat")).run()
    assert res.status == "ok", res.errors
    assert res.chat_template_tokens == 9
    assert "usage.prompt_tokens" in res.chat_template_from
    assert res.server.endpoint == "chat"
    measured = [r for r in res.runs if r.phase in ("decode", "prefill", "ttft")]
    assert measured and all(r.ok for r in measured)
    assert all(r.prompt_tokens == r.target_prompt_tokens for r in res.runs)  # template included
    assert all(r.extra.prompt_tokens_mismatch is None for r in res.runs)
    # every request after the template probe was a chat request whose content opens with a nonce
    assert all("messages" in body and "prompt" not in body for body in behaviour.requests)
    contents = [body["messages"][0]["content"] for body in behaviour.requests]
    assert all(c.startswith("[") for c in contents) and len({c.split()[0] for c in contents}) == len(contents)


def test_completions_bench_sends_prompts_and_records_its_endpoint():
    behaviour = Behaviour(itl_s=0.001, chat_template_tokens=9)
    with TimedServer(behaviour) as srv:
        res = Bench(make_server(srv.url), BenchSettings(**PLAN)).run()
    assert res.status == "ok", res.errors
    assert res.chat_template_tokens is None and res.server.endpoint == "completions"
    assert all("prompt" in body for body in behaviour.requests)


def test_endpoint_flag_reaches_the_plan_and_rejects_other_values(capsys):
    p = build_parser()
    assert settings_from_args(p.parse_args(["bench", "--url", "http://h:1", "--endpoint", "chat"])).endpoint == "chat"
    assert settings_from_args(p.parse_args(["bench", "--url", "http://h:1"])).endpoint == "completions"
    with pytest.raises(SystemExit) as exc:
        p.parse_args(["bench", "--url", "http://h:1", "--endpoint", "generate"])
    assert exc.value.code == 2 and "--endpoint" in capsys.readouterr().err


SWEEP = """
[defaults]
url = "http://127.0.0.1:8080"
endpoint = "chat"

[[variant]]
label = "a"
precision = "fp16"
model = "m1"

[[variant]]
label = "b"
precision = "int4"
model = "m2"
endpoint = "completions"
"""


def test_sweep_key_endpoint_in_defaults_and_per_variant():
    spec = parse_spec(SWEEP)
    assert [v.settings.endpoint for v in spec.variants] == ["chat", "completions"]
    assert spec.settings_dict()["endpoint"] == "chat"


def test_sweep_key_endpoint_rejects_other_values_naming_line_and_key():
    with pytest.raises(SpecError) as exc:
        parse_spec(SWEEP.replace('endpoint = "completions"', 'endpoint = "generate"'), None)
    assert (
        str(exc.value) == "<sweep>:15: variant #2 key 'endpoint': expected \"completions\" or \"chat\", got 'generate'"
    )


def test_a_sweep_measures_each_variant_on_its_own_endpoint(tmp_path):
    text = """
[defaults]
url = "URL"
server = "llamacpp"
model = "fake-Q4_K_M"
output_tokens = 4
decode_prompt_tokens = 16
prefill_tokens = [32]
ttft_tokens = 48
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0

[[variant]]
label = "chat"
precision = "fp16"
endpoint = "chat"

[[variant]]
label = "raw"
precision = "fp16"
"""
    with TimedServer(Behaviour(itl_s=0.001, chat_template_tokens=5)) as srv:
        path = SweepRunner(parse_spec(text.replace("URL", srv.url)), tmp_path).run()
    doc = json.loads(path.read_text())
    assert doc["settings"]["endpoint"] == "completions"  # [defaults]; the variants say their own
    chat, raw = doc["variants"]
    assert (chat["status"], raw["status"]) == ("ok", "ok"), (chat["errors"], raw["errors"])
    assert (chat["server"]["endpoint"], raw["server"]["endpoint"]) == ("chat", "completions")
    assert chat["chat_template_tokens"] == 5 and "chat_template_tokens" not in raw
    for v in (chat, raw):
        assert all(r["prompt_tokens"] == r["target_prompt_tokens"] for r in v["runs"] if r["phase"] != "idle")
