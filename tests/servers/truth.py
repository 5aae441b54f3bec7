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
    # The client's clock starts before the request is sent and stops after the chunk is read, so it
    # can never be below the server's own span; above it, allow 5% plus 10 ms for HTTP and for the
    # in-process fake sharing the GIL and 2 cores with the client (seen: +6.8 ms once in CI).
    true_ttft = truth_ttft_s(truth)
    assert true_ttft - 0.001 <= res.ttft_s <= true_ttft * 1.05 + 0.010, (res.ttft_s, true_ttft)
    assert decode_rate_tok_s(res) == pytest.approx(truth_decode_tok_s(truth), rel=0.04)


def words_prompt(n_tokens: int, nonce: str = "a1b2c3") -> str:
    """A prompt of exactly n_tokens for the fakes (words + BOS), nonce first."""
    return " ".join([f"[{nonce}]"] + [f"w{i}" for i in range(n_tokens - 2)])
