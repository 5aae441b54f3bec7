"""Ask a server for teacher-forced next-token distributions (docs/design.md §4 "Quality").

llama-server returns probabilities only for tokens it generates, never for prompt positions, so
each position is one request: the text's first i+1 token ids as the prompt, one token to
generate, `n_probs` top-K of the raw distribution (`post_sampling_probs: false`), and a
`logit_bias` that steers the sampler onto the text's own next token, whose `logprob` then comes
from the same raw distribution. `cache_prompt: true` makes each request evaluate one new token:
these are not timing requests, so the cache hit is the point, not a fault.

vLLM and a plain OpenAI-compatible server score every position in one request
(measure/quality/fetch_openai.py); other kinds are n/a, with the reason (each kind's `quality`
method and reason are its record's: servers/kinds.py). Everything a server
sends is read as untrusted.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from precmon.measure.quality.score import FLOOR, Position
from precmon.servers.base import ServerError
from precmon.servers.kinds import capabilities
from precmon.servers.wire.fields import as_float, as_int, dicts, list_field

#: How hard the sampler is pushed onto the text's token (logits of a sane model span ~±50).
FORCE_BIAS = 1000.0
MAX_TOKEN_ID = 10_000_000
#: A log-probability below ln(1e-12) reads as that (a server may send float's lowest for p = 0).
MIN_LOGPROB = math.log(FLOOR)
#: Per request: a one-token step of even a big model on a slow machine is well inside this.
REQUEST_TIMEOUT_S = 120.0


class QualityUnavailable(Exception):
    """This server cannot give teacher-forced distributions; str() says why (one line)."""


class QualityStopped(Exception):
    """The user asked to stop while quality was being scored."""


@runtime_checkable
class PostsJson(Protocol):
    """What a protocol class of precmon.servers offers for plain JSON requests."""

    kind: str
    url: str

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object: ...

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None: ...


ProgressFn = Callable[[int, int], None]


def check_supported(server: object) -> PostsJson:
    """The server, if quality can be scored through it; else QualityUnavailable with the reason."""
    kind = str(getattr(server, "kind", "?"))
    record = capabilities(kind)  # its `quality` method (docs/design.md §4 "Quality" table), or why not
    if record.quality is None:
        raise QualityUnavailable(f"not available on {kind} servers: {record.no_quality}")
    if not isinstance(server, PostsJson):
        raise QualityUnavailable("this connection offers no plain JSON requests (quality runs from bench and sweep)")
    return server


def logprob(value: object) -> float | None:
    """A server's log-probability clamped to [ln 1e-12, 0]; None when it is not a number ≤ 0.01."""
    lp = as_float(value, max=0.01)  # a log-probability is ≤ 0; a hair above is rounding
    return None if lp is None else max(min(lp, 0.0), MIN_LOGPROB)


def parse_llamacpp(body: object, forced: int, top_k: int) -> Position:
    """One position from `/completion`'s answer (`completion_probabilities[0]`).

    Raises:
        ServerError: the answer has no usable top list (named, with what was there instead).
    """
    entries = dicts(list_field(body, "completion_probabilities"))
    if not entries:
        raise ServerError("quality: /completion answered without completion_probabilities (n_probs ignored?)")
    first = entries[0]
    top: list[tuple[int, float]] = []
    for item in dicts(first.get("top_logprobs")):
        tok, lp = as_int(item.get("id"), max=MAX_TOKEN_ID), logprob(item.get("logprob"))
        if tok is not None and lp is not None:
            top.append((tok, lp))
    if not top:
        raise ServerError("quality: /completion gave no top_logprobs with an id and a log-probability")
    top.sort(key=lambda x: (-x[1], x[0]))
    own = logprob(first.get("logprob")) if as_int(first.get("id"), max=MAX_TOKEN_ID) == forced else None
    return Position(tuple(top[:top_k]), own)


def llamacpp_positions(
    server: PostsJson,
    tokens: list[int],
    top_k: int | Sequence[int],
    *,
    model: str | None = None,
    router: bool = False,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
    start: int = 0,
) -> list[Position]:
    """Positions `start` … len(tokens)−2: the distribution after tokens[: i + 1], teacher-forced
    (`start` > 0 skips the first ones: the truth bench scores only llama-perplexity's positions).
    `top_k` is one K for every position, or one per position from `start` on (a variant asks at
    each position as many as the baseline kept there: measure/quality/adaptive.py).

    Raises:
        ServerError: a request failed or its answer was unusable.
        QualityStopped: `stop` was set.
    """
    out: list[Position] = []
    n = len(tokens) - 1
    for i in range(start, n):
        if stop is not None and stop.is_set():
            raise QualityStopped()
        k = top_k if isinstance(top_k, int) else top_k[i - start]
        body: dict[str, Any] = {
            "prompt": tokens[: i + 1],
            "n_predict": 1,
            "n_probs": k,
            "post_sampling_probs": False,
            "cache_prompt": True,
            "temperature": 0.0,
            "logit_bias": [[tokens[i + 1], FORCE_BIAS]],
            "stream": False,
        }
        if router and model:
            body["model"] = model
        out.append(parse_llamacpp(server.post_json("/completion", body, REQUEST_TIMEOUT_S), tokens[i + 1], k))
        if progress is not None:
            progress(i + 1, n)
    return out
