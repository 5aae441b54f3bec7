"""The base file of `llama-perplexity --kl-divergence-base` as `--quality-ref` (measure/quality/llama_base.py):
its layout as perplexity.cpp writes it, the reference made from it, the variant scored against
it, and the one-line errors of a file that is not one or of another vocabulary."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from precmon.measure.quality.llama_base import read_base_file
from precmon.measure.quality.reference import QualityRefError, load_reference
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import LLAMA_PERPLEXITY
from tests.fakes.quality_stub import StubLlama

N_CTX, N_VOCAB = 8, 5  # rows per chunk: 8 − 1 − 4 = 3; values per row: 2⌈5/2⌉ + 4 = 10


def write_base(path: Path, logps: list[list[list[float]]], tokens: list[int], n_vocab: int = N_VOCAB) -> Path:
    """A base file laid out as perplexity.cpp's `process_logits` writes it: the header, the ids,
    then per row (scale, min_log_prob) as two float32 and one uint16 per token."""
    nv = 2 * ((n_vocab + 1) // 2) + 4
    out = bytearray(b"_logits_") + np.array([N_CTX, n_vocab, len(logps)], "<i4").tobytes()
    out += np.array(tokens, "<i4").tobytes()
    for chunk in logps:
        for row in chunk:
            lo, hi = min(row), max(row)
            scale = (hi - lo) / 65535
            vals = [round((lp - lo) / scale) for lp in row] + [0] * (nv - 4 - n_vocab)
            out += np.array([scale, lo], "<f4").tobytes() + np.array(vals, "<u2").tobytes()
    path.write_bytes(bytes(out))
    return path


ROW = [math.log(p) for p in (0.6, 0.25, 0.1, 0.04, 0.01)]
TOKENS = [1, 2, 3, 4, 0, 1, 2, 3, 1, 4, 3, 2, 1, 0, 4, 3]  # 2 chunks of 8


def test_the_reference_is_the_files_windows_listed_as_a_baseline_lists_them(tmp_path):
    path = write_base(tmp_path / "f16.kld", [[ROW] * 3, [ROW[::-1]] * 3], TOKENS)
    base = read_base_file(path)
    assert (base.window, base.n_vocab, base.chunks, base.rows_per_chunk) == (N_CTX, N_VOCAB, 2, 3)
    ref = load_reference(path, positions=6)
    assert ref.convention == LLAMA_PERPLEXITY and ref.window == N_CTX and ref.text_sha256 is None
    assert not ref.bos_known and ref.n_vocab == N_VOCAB and ref.tokens == tuple(TOKENS) and len(ref.positions) == 6
    first = ref.positions[0]
    assert [t for t, _ in first.top] == [0, 1, 2, 3, 4]  # 0.95 needs 4 tokens; at least quality_top_k (20): all 5
    assert first.top[0][1] == pytest.approx(math.log(0.6), abs=1e-3)
    assert first.own_logprob == pytest.approx(ROW[TOKENS[5]], abs=1e-3)  # row 0 predicts the chunk's token 5
    assert ref.positions[3].top[0][0] == 4  # chunk 2: reversed
    assert len(load_reference(path, positions=3).positions) == 3  # as many windows as the positions need


def test_a_server_of_the_same_vocabulary_is_scored_against_it_one_of_another_is_na(tmp_path):
    path = write_base(tmp_path / "f16.kld", [[ROW] * 3], TOKENS[:8])
    ref = load_reference(path, positions=3)

    class Stub(StubLlama):
        def __init__(self, tokens: list[int], vocab: int) -> None:
            super().__init__(tokens)
            self.vocab = vocab

        def model_info(self, model: Any) -> Any:
            return type("Info", (), {"vocab_size": self.vocab})()

    qs = QualitySettings(positions=3, top_k=2, text="the text the file was made from")
    out = measure_quality(Stub(TOKENS[:8] + [9], N_VOCAB), qs, label="Q4", model=None, reference=ref)
    assert out.info.reason is None and out.info.positions == 3 and out.info.baseline == "f16.kld"
    assert out.metrics["quality_kld_mean"] is not None
    other = measure_quality(Stub(TOKENS[:8], 32000), qs, label="Q4", model=None, reference=ref)
    assert (
        other.info.reason == "f16.kld was written by a model of 5 tokens, the served one has 32000: another vocabulary"
    )
    text = measure_quality(Stub([1, 2, 9, 9, 9, 9, 9, 9], N_VOCAB), qs, label="Q4", model=None, reference=ref)
    assert text.info.reason == "the tokenizer differs from the baseline's at token 2"


@pytest.mark.parametrize(
    "content, said",
    [
        (b"{}", "no quality reference here"),
        (b"_logits_" + np.array([N_CTX, N_VOCAB, 1], "<i4").tobytes(), "too short for its 1 chunks of 8 tokens"),
        (b"_logits_" + np.array([0, N_VOCAB, 1], "<i4").tobytes(), "header says n_ctx 0, n_vocab 5, 1 chunks"),
        (b"_logits_" + np.array([N_CTX, N_VOCAB, 1], "<i4").tobytes() + bytes(32), "truncated or not a base file"),
    ],
)
def test_a_file_that_is_not_a_base_file_is_one_line_naming_it(tmp_path, content, said):
    path = tmp_path / "x.kld"
    path.write_bytes(content)
    with pytest.raises(QualityRefError, match=f"^{path}: .*{said}") as err:
        load_reference(path)
    assert "\n" not in str(err.value)


def test_an_id_outside_the_vocabulary_is_refused(tmp_path):
    path = write_base(tmp_path / "f16.kld", [[ROW] * 3], [1, 2, 3, 4, 0, 1, 2, 7])
    with pytest.raises(QualityRefError, match="a token id outside its vocabulary of 5"):
        load_reference(path)
