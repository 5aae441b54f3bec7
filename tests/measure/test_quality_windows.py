"""llama-perplexity's windows (measure/quality/windows.py) and the measure path that asks for them,
against stub servers: which ids each window gives the model, which positions are scored, what a
short text gives, and that llama.cpp, vLLM and a text-only OpenAI server ask for the same windows."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from precmon.measure.quality.collect import PROMPT_LOGPROBS_MAX
from precmon.measure.quality.fetch_openai import text_token_id
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, save_reference
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import FROM_START, LLAMA_PERPLEXITY, TextTooShort, cut, per_window, windows_for
from tests.fakes.quality_stub import StubLlama

IDS = list(range(1, 1101))  # 1 first: the stub's BOS


def test_a_window_is_512_ids_its_first_the_bos_and_its_second_half_scored():
    c = cut(IDS, LLAMA_PERPLEXITY, 510, bos=1)
    assert per_window() == 255 and windows_for(510) == 2 and windows_for(512) == 3 and windows_for(1) == 1
    assert [len(w.tokens) for w in c.windows] == [512, 512] and {w.first for w in c.windows} == {256}
    assert c.windows[0].tokens == tuple(IDS[:512])  # the text's own BOS
    assert c.windows[1].tokens == (1, *IDS[513:1024])  # its first id replaced by the BOS, as llama-perplexity does
    assert c.positions == 510 and c.tokens == tuple(IDS[:1024]) and c.note is None and c.bos == 1


def test_a_model_without_a_bos_gets_the_windows_as_they_are():
    c = cut(IDS, LLAMA_PERPLEXITY, 300, bos=None)
    assert c.windows[1].tokens == tuple(IDS[512:1024])


def test_a_text_short_of_the_windows_gives_those_it_has_and_says_so():
    c = cut(IDS, LLAMA_PERPLEXITY, 512)  # 3 windows needed, 2 fit in 1,100 ids
    assert len(c.windows) == 2 and c.positions == 510
    assert c.note == "the text has 1100 tokens: 2 windows of 512 (510 positions), not the 3 that 512 positions need"


def test_a_text_shorter_than_a_window_cannot_be_scored_this_way():
    with pytest.raises(TextTooShort, match=r"the text has 300 tokens, fewer than one 512-token window.*from-start"):
        cut(IDS[:300], LLAMA_PERPLEXITY, 512)
    fs = cut(IDS[:300], FROM_START, 512)  # the option for short texts
    assert fs.windows[0].first == 0 and fs.positions == 299 and "299 positions, not 512" in (fs.note or "")


def test_llamacpp_asks_each_windows_second_half_and_the_variant_the_same_positions(tmp_path):
    stub = StubLlama(IDS)
    qs = QualitySettings(positions=300, top_k=2, text="long text")
    base = measure_quality(stub, qs, label="F16", model=None, reference=None)
    assert base.info.reason is None and base.info.convention == LLAMA_PERPLEXITY
    assert (base.info.windows, base.info.window_tokens, base.info.positions) == (2, 512, 510)
    prompts = [b["prompt"] for b in stub.bodies]
    assert [len(p) for p in prompts] == [*range(257, 512), *range(257, 512)]
    assert prompts[255][:2] == [1, 514] and prompts[255][1:] == IDS[513:769]  # window 2: the BOS, then its own ids
    assert [b["logit_bias"][0][0] for b in stub.bodies[:2]] == [IDS[257], IDS[258]]  # the text's next token forced
    ref = base.reference
    assert ref is not None and ref.convention == LLAMA_PERPLEXITY and ref.bos == 1 and len(ref.tokens) == 1024
    save_reference(tmp_path / "quality-ref.json", ref)
    again = load_reference(tmp_path / "quality-ref.json")
    assert again == ref
    variant = StubLlama(IDS, shift=0.1)
    out = measure_quality(variant, qs, label="Q4", model=None, reference=again)
    assert out.info.convention == LLAMA_PERPLEXITY and out.info.positions == 510
    assert [b["prompt"] for b in variant.bodies] == prompts  # the same windows, the same positions
    assert out.metrics["quality_kld_mean"] == pytest.approx(0.040547, abs=1e-6)


def test_a_variant_whose_server_puts_no_bos_first_is_na():
    qs = QualitySettings(positions=255, top_k=2, text="long text")
    ref = measure_quality(StubLlama(IDS), qs, label="F16", model=None, reference=None).reference
    no_bos = [2, *IDS[1:]]  # the same ids after the first, and no BOS
    out = measure_quality(StubLlama(no_bos), qs, label="X", model=None, reference=ref)
    assert out.info.reason == "the tokenizer differs from the baseline's at token 0"


class StubVllm:
    """vLLM: `/tokenize` and one `prompt_logprobs` answer per prompt, every prompt position listed."""

    kind, url = "vllm", "http://stub"

    def __init__(self, tokens: list[int]) -> None:
        self.tokens, self.bodies = tokens, []

    def tokenize(self, text: str, model: str | None = None) -> list[int]:
        return self.tokens[:1] if not text else list(self.tokens)

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        self.bodies.append(payload)
        k, prompt = payload["prompt_logprobs"], payload["prompt"]
        entry = {str(5000 + t): {"logprob": math.log(0.5 * 0.5**t)} for t in range(k)}
        return {"choices": [{"prompt_logprobs": [None] + [entry] * (len(prompt) - 1)}]}


def test_vllm_asks_one_request_a_window_and_keeps_its_second_half():
    stub = StubVllm(IDS)
    out = measure_quality(stub, QualitySettings(positions=300, text="t"), label="bf16", model=None, reference=None)
    assert out.info.reason is None and out.info.positions == 510 and out.info.windows == 2
    assert [b["prompt"] for b in stub.bodies] == [IDS[:512], [1, *IDS[513:1024]]]
    assert {b["prompt_logprobs"] for b in stub.bodies} == {PROMPT_LOGPROBS_MAX}  # never the baseline's 1,000


class EchoOnly:
    """A text-only OpenAI-compatible server: `echo` + `logprobs`, tokens named by their text; it
    puts "<s>" before every prompt and splits text into words with their leading space."""

    kind, url = "openai", "http://stub"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def tokenize(self, text: str, model: str | None = None) -> None:
        return None

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        self.prompts.append(payload["prompt"])
        names = ["<s>", *re.findall(r"\s*\S+", payload["prompt"])]
        top = {name: math.log(0.5) for name in names[:1]} | {"x": math.log(0.25)}
        return {
            "choices": [
                {"logprobs": {"tokens": names, "token_logprobs": [None] + [-1.0] * (len(names) - 1),
                              "top_logprobs": [None] + [top] * (len(names) - 1)}}
            ],
            "usage": {"prompt_tokens": len(names)},
        }  # fmt: skip


def test_a_text_only_server_is_sent_each_windows_text_and_scores_the_same_positions():
    text = " ".join(f"w{i}" for i in range(1100))
    stub = EchoOnly()
    out = measure_quality(
        stub, QualitySettings(positions=300, top_k=2, text=text), label="a", model=None, reference=None
    )
    assert out.info.reason is None and out.info.positions == 510 and out.info.windows == 2
    words = re.findall(r"\s*\S+", text)
    assert stub.prompts[1] == "".join(words[:511]) and stub.prompts[2] == "".join(words[512:1023])
    ref = out.reference
    assert isinstance(ref, Reference) and ref.bos == text_token_id("<s>") and ref.tokens[1] == text_token_id("w0")


def test_a_reference_written_before_conventions_reads_as_from_start(tmp_path):
    qs = QualitySettings(positions=3, top_k=2, text="some text", convention=FROM_START)
    ref = measure_quality(StubLlama([1, 10, 11, 12]), qs, label="F16", model=None, reference=None).reference
    assert ref is not None and ref.convention == FROM_START
    old = ref.to_dict() | {"schema": "precmon.quality_ref/1"}
    for key in ("convention", "window", "bos"):
        del old[key]
    (tmp_path / "old.json").write_text(json.dumps(old))
    again = load_reference(tmp_path / "old.json")
    assert again.convention == FROM_START and again.positions == ref.positions
    out = measure_quality(StubLlama([1, 10, 11, 12]), QualitySettings(positions=512, text="some text"), label="Q",
                          model=None, reference=again)  # fmt: skip
    assert out.info.convention == FROM_START and out.info.positions == 3  # the reference decides, not the settings


def test_a_reference_whose_ids_are_not_whole_windows_is_refused(tmp_path):
    ref = measure_quality(StubLlama(IDS), QualitySettings(positions=255, top_k=2, text="t"), label="F16", model=None,
                          reference=None).reference  # fmt: skip
    assert ref is not None
    bad = ref.to_dict() | {"tokens": list(IDS[:600])}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(
        QualityRefError, match=r"reference\.tokens: 600 ids and 255 positions are not whole windows of 512"
    ):
        load_reference(tmp_path / "bad.json")
