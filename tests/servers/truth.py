"""Comparing an adapter's StreamResult with a fake server's server-side truth."""

from __future__ import annotations

from typing import Any

import pytest

from precmon.measure.timing import decode_rate_tok_s, validate
from precmon.servers.base import StreamResult


def truth_decode_tok_s(t: dict[str, Any]) -> float:
    return (t["tokens"] - 1) / (t["t_last"] - t["t_first"])


def truth_ttft_s(t: dict[str, Any]) -> float:
    return t["t_first"] - t["t_recv"]


def assert_matches_truth(res: StreamResult, truth: dict[str, Any], asked: int) -> None:
    """Valid run; same token counts; TTFT and decode tok/s within a few percent of the truth."""
    assert validate(res, asked) is None, validate(res, asked)
    assert res.completion_tokens == truth["tokens"] == asked
    assert res.prompt_tokens == truth["prompt_tokens"]
    assert res.ttft_s == pytest.approx(truth_ttft_s(truth), rel=0.05, abs=0.004)
    assert decode_rate_tok_s(res) == pytest.approx(truth_decode_tok_s(truth), rel=0.04)


def words_prompt(n_tokens: int, nonce: str = "a1b2c3") -> str:
    """A prompt of exactly n_tokens for the fakes (words + BOS), nonce first."""
    return " ".join([f"[{nonce}]"] + [f"w{i}" for i in range(n_tokens - 2)])
