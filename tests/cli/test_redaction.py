"""The last line of defence against stored secrets (issue 11 #15): every document precmon writes
passes `redact_tree`; credentials go, model names that merely look like key prefixes stay."""

from __future__ import annotations

import json

from precmon.core.schema import Host, ServerInfo, VariantResult, to_json
from precmon.measure.results import results_document
from precmon.sweep.store import ResultStore
from precmon.untrusted import redact, redact_tree


def _variant() -> VariantResult:
    return VariantResult(
        label="fp16",
        precision="fp16",
        model="hf-internal-testing/tiny-random-gpt2",
        server=ServerInfo(kind="vllm", url="http://user:pa55word@127.0.0.1:8000"),
        errors=['HTTP 502: {"headers": "Authorization: Bearer sk-live0123456789abcdefXYZ"}'],
        launch=["vllm", "serve", "m", "--api-key", "plainsecretvalue", "--port", "8000"],
    )


def test_results_document_holds_no_credential():
    text = json.dumps(to_json(results_document([_variant()], {"timeout_s": 1.0})))
    for secret in ("pa55word", "sk-live0123456789abcdefXYZ", "plainsecretvalue"):
        assert secret not in text
    doc = json.loads(text)
    (v,) = doc["variants"]
    assert v["server"]["url"] == "http://***@127.0.0.1:8000"
    assert v["launch"] == ["vllm", "serve", "m", "--api-key", "***", "--port", "8000"]
    assert v["model"] == "hf-internal-testing/tiny-random-gpt2"  # not a key: kept


def test_journal_holds_no_credential(tmp_path):
    store = ResultStore(tmp_path, {}, Host(hostname="h"))
    store.put_variant(_variant())
    for name in ("journal.jsonl", "results.json"):
        text = (tmp_path / name).read_text()
        assert "pa55word" not in text and "plainsecretvalue" not in text and "sk-live0123" not in text


def test_redact_tree_keeps_numbers_keys_and_plain_words():
    doc = {"metrics": {"decode_tok_s": 12.5, "prefill_ms_per_token": {"512": 0.1}}, "ok": True, "n": None}
    assert redact_tree(doc) == doc
    assert (
        redact("max_tokens=16 prompt_tokens: 12 model pk-llama-3-8b")
        == "max_tokens=16 prompt_tokens: 12 model pk-llama-3-8b"
    )
    assert redact("starting vllm serve m --api-key abc --port 1") == "starting vllm serve m --api-key *** --port 1"
