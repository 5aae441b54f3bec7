"""`precmon bench --endpoint chat` against a real llama-server (router mode, tiny-Q8_0, CPU).

The tiny models carry no chat template, so llama-server applies its default (chatml:
`<|im_start|>user\n…<|im_end|>\n<|im_start|>assistant\n`, 27 tokens with this vocabulary). What
must hold on chat as on completions: every run valid, prompt tokens from usage (equal to what the
server says it processed), prefill and TTFT prompts of exactly the asked size template included,
no prompt-cache hit, and the client's decode rate close to llama-server's own `timings`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

CHATML_TOKENS = 27  # measured: usage.prompt_tokens − /tokenize count, the same for every nonce


@pytest.fixture(scope="module")
def chat_variant(router_server, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("chat") / "chat.json"
    argv = [sys.executable, "-m", "precmon.cli", "bench", "--url", router_server.url, "--model", "tiny-Q8_0"]
    argv += ["--quick", "--no-power", "--endpoint", "chat", "--json", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["settings"]["endpoint"] == "chat"
    [variant] = doc["variants"]
    return variant


def test_every_run_valid_on_the_chat_endpoint(chat_variant):
    v = chat_variant
    assert v["status"] == "ok", v["errors"]
    assert v["server"]["endpoint"] == "chat"
    assert v["chat_template_tokens"] == CHATML_TOKENS
    assert all(r["ok"] for r in v["runs"] if r["phase"] != "idle")


def test_prompt_tokens_come_from_usage_and_hit_the_size_with_the_template(chat_variant):
    runs = [r for r in chat_variant["runs"] if r["phase"] != "idle"]
    for r in runs:
        assert r["prompt_tokens"] == r["server_timings"]["prompt_n"]  # usage == what the server processed
        assert "prompt_tokens_mismatch" not in r["extra"]
    for r in runs:
        if r["phase"] in ("prefill", "ttft"):
            assert r["prompt_tokens"] == r["target_prompt_tokens"]
        else:  # --quick's 32-token decode prompt: the template and the nonce alone take more, and it says so
            assert r["prompt_tokens"] > r["target_prompt_tokens"]
    assert any("the chat template (27 tokens) and the nonce alone take more" in e for e in chat_variant["errors"])


def test_no_prompt_cache_hits_on_chat(chat_variant):
    # the template's fixed prefix is shared by every request; cache_prompt: false keeps it unused
    for r in chat_variant["runs"]:
        if r["phase"] != "idle":
            assert r["cached_tokens"] == 0 and r["server_timings"]["cache_n"] == 0


def test_client_decode_close_to_the_servers_timings_on_chat(chat_variant):
    m = chat_variant["metrics"]
    assert m["decode_tok_s"] == pytest.approx(m["server_decode_tok_s"], rel=0.10)
