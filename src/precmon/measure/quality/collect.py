"""Ask a server for the distributions at every scored position of the windows (docs/design.md §4).

One loop over the windows (measure/quality/windows.py) for the two methods that send token ids:
llama.cpp's one request per position (measure/quality/fetch.py), each window's positions asked
in order so the prompt cache holds the window's prefix, and vLLM's one `prompt_logprobs` request
per window (measure/quality/fetch_openai.py), whose answer lists every position of the prompt:
only the window's scored ones are kept. The legacy `echo` method sends text and is
fetch_openai.py's `echo_windows`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from precmon.core.settings import QUALITY_VLLM_TOP_K_MAX
from precmon.measure.quality.fetch import PostsJson, QualityStopped, llamacpp_positions
from precmon.measure.quality.fetch_openai import vllm_positions_capped
from precmon.measure.quality.score import Position
from precmon.measure.quality.windows import Cut
from precmon.servers.base import ServerError

#: The most log-probabilities asked per position of a vLLM `prompt_logprobs` request. Its answer
#: lists every prompt position (a window's unscored half too) at one K, and building and sending
#: it, not the forward pass, is the cost; the tail estimate (measure/quality/score.py `kl_parts`)
#: stands in for the tokens past it (docs/benchmarks.md "Quality scoring cost" has both).
PROMPT_LOGPROBS_MAX = QUALITY_VLLM_TOP_K_MAX

ProgressFn = Callable[[int, int], None]


def first_token_added(server: PostsJson, model: str | None, tokens: Sequence[int]) -> int | None:
    """The id the server puts before any text (the BOS of a model that adds one), None when it
    adds none: what an empty text tokenizes to, where the text's own ids start with it too."""
    try:
        empty = server.tokenize("", model)
    except ServerError:
        empty = None
    if empty and tokens and tokens[0] == empty[0]:
        return int(empty[0])
    return None


@dataclass(frozen=True)
class Collected:
    """The scored positions of every window in order; the most K asked of a request (after
    PROMPT_LOGPROBS_MAX) and the most a request was answered with (vLLM's --max-logprobs may
    allow fewer)."""

    positions: list[Position]
    asked: int
    answered: int


def collect(
    server: PostsJson,
    method: str,
    windows: Cut,
    top_k: int | Sequence[int],
    *,
    model: str | None = None,
    router: bool = False,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
) -> Collected:
    """Every window's scored positions, asked by `method` ("per-position" or "prompt_logprobs").

    `top_k`: one K for every position, or one per scored position (a variant asks as many as
    the baseline kept there). vLLM is asked at most PROMPT_LOGPROBS_MAX a position, and at most
    what its --max-logprobs allows (found on the first window, kept for the others).

    Raises:
        QualityStopped: `stop` was set.
        QualityUnavailable, ServerError: as the fetchers raise them.
    """
    out: list[Position] = []
    total, asked, answered = windows.positions, 0, 0
    limit = PROMPT_LOGPROBS_MAX
    for w in windows.windows:
        if stop is not None and stop.is_set():
            raise QualityStopped()
        done = len(out)
        ks = top_k if isinstance(top_k, int) else list(top_k[done : done + w.positions])
        k = ks if isinstance(ks, int) else max(ks)

        def step(i: int, _n: int, done: int = done, first: int = w.first) -> None:
            if progress is not None:
                progress(done + i - first, total)

        if method == "prompt_logprobs":
            asked, want = max(asked, min(k, PROMPT_LOGPROBS_MAX)), min(k, limit)
            got, used = vllm_positions_capped(server, list(w.tokens), want, model=model)
            limit = used if used < want else limit  # the server's --max-logprobs: no need to be refused again
            out += got[w.first :]
            answered = max(answered, used)
            step(w.first + w.positions, total)
        else:
            out += llamacpp_positions(
                server, list(w.tokens), ks, model=model, router=router, progress=step, stop=stop, start=w.first
            )
            asked, answered = max(asked, k), max(answered, k)
    return Collected(out, asked, answered)
