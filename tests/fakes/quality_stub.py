"""A stub llama-server for quality tests: `/completion` answers without HTTP (the real server is
tests/integration/test_quality_llamacpp.py)."""

from __future__ import annotations

import math
from typing import Any


def answer(top: list[tuple[Any, Any]], own_id: Any = 9, own_lp: Any = -3.0) -> dict[str, Any]:
    return {
        "completion_probabilities": [
            {"id": own_id, "logprob": own_lp, "top_logprobs": [{"id": t, "logprob": lp} for t, lp in top]}
        ]
    }


class StubLlama:
    """Answers /completion with a distribution that depends on the prompt's length only."""

    kind, url = "llamacpp", "http://stub"

    def __init__(self, tokens: list[int], shift: float = 0.0, router: bool = False) -> None:
        self.tokens, self.shift, self.router = tokens, shift, router
        self.bodies: list[dict[str, Any]] = []

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        """The stub's ids for any text; an empty text gives the BOS alone where the ids start with 1."""
        if not text:
            return self.tokens[:1] if self.tokens[:1] == [1] else []
        return list(self.tokens)

    def is_router(self) -> bool:
        return self.router

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        assert path == "/completion"
        self.bodies.append(payload)
        n = len(payload["prompt"])
        forced = payload["logit_bias"][0][0]
        return answer([(100 + n, math.log(0.5)), (200, math.log(0.3 - self.shift))], forced, -1.5)
