"""Teacher-forced top-K in one request: vLLM `prompt_logprobs`, OpenAI `echo` + `logprobs`.

vLLM scores every prompt position of one `/v1/completions` request when asked for
`prompt_logprobs: K`: `choices[0].prompt_logprobs` has one entry per prompt token (the first
null), each `{token_id: {logprob, rank, decoded_token}}` with the top-K *and* the prompt's own
token even when it ranks below K, so the own log-probability (perplexity) always comes. The
prompt is the token ids of the server's own `/tokenize`, so positions line up with the ids
compared against the baseline's. K above the server's `--max-logprobs` (default 20) is refused
by vLLM; that refusal becomes the n/a reason, naming the flag.

The legacy OpenAI shape (`echo: true`, `logprobs: K`) is the fallback for a plain
OpenAI-compatible server: `logprobs.tokens`, `token_logprobs` and `top_logprobs` per prompt
token, the first null. It names tokens by their text, not id; a name vLLM writes as
`token_id:N` (`return_tokens_as_token_ids`) is read as N, any other gets a stable id from a
hash of its text (`text_token_id`), so two servers that tokenize alike compare alike. A server
that names two different tokens with the same text merges them in its own answer already.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from precmon.measure.quality.fetch import MAX_TOKEN_ID, PostsJson, QualityUnavailable, logprob
from precmon.measure.quality.score import Position
from precmon.measure.quality.windows import LLAMA_PERPLEXITY, WINDOW_TOKENS, Cut, TextTooShort, cut, windows_for
from precmon.servers.base import ServerError
from precmon.servers.wire.fields import as_dict, as_int, dicts, list_field

#: vLLM's default `--max-logprobs` (vllm/config/model.py): the largest K it takes unless started with more.
VLLM_DEFAULT_MAX_LOGPROBS = 20
#: One request scores every position: the whole text's forward pass, on a slow machine too.
ONE_REQUEST_TIMEOUT_S = 600.0
#: The fallback cannot cut the text at P+1 tokens before the server tokenized it: it sends at
#: most this many characters per wanted token (English runs ~4 per token) and keeps P positions.
CHARS_PER_TOKEN_MAX = 8
TOKEN_ID_PREFIX = "token_id:"


def text_token_id(name: str) -> int:
    """A stable id (0 … MAX_TOKEN_ID − 1) for a token a server names only by its text."""
    digest = hashlib.blake2b(name.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % MAX_TOKEN_ID


def _token_id(name: object) -> int | None:
    if not isinstance(name, str):
        return None
    if name.startswith(TOKEN_ID_PREFIX):
        return as_int(name[len(TOKEN_ID_PREFIX) :], max=MAX_TOKEN_ID)
    return text_token_id(name)


def _top(pairs: list[tuple[int, float]], top_k: int) -> tuple[tuple[int, float], ...]:
    pairs.sort(key=lambda x: (-x[1], x[0]))
    return tuple(pairs[:top_k])


def too_many_logprobs(exc: ServerError, top_k: int) -> QualityUnavailable | None:
    """vLLM's 400 for K above its `--max-logprobs`, as the n/a reason that names the flag."""
    if exc.http_status != 400 or "max allowed" not in str(exc):
        return None
    return QualityUnavailable(
        f"vLLM refused top-{top_k} log-probabilities: above its --max-logprobs "
        f"(default {VLLM_DEFAULT_MAX_LOGPROBS}); start vLLM with --max-logprobs {top_k} "
        f"or set quality_top_k ≤ {VLLM_DEFAULT_MAX_LOGPROBS}"
    )


_MAX_ALLOWED = re.compile(r"max allowed:?\s*(\d+)")


def allowed_max(exc: ServerError) -> int | None:
    """The K vLLM said it allows ("… greater than max allowed: 20"), or None."""
    found = _MAX_ALLOWED.search(str(exc)) if exc.http_status == 400 else None
    return int(found.group(1)) if found and 1 <= int(found.group(1)) else None


def vllm_positions_capped(
    server: PostsJson, tokens: list[int], top_k: int, *, model: str | None = None
) -> tuple[list[Position], int]:
    """(positions, the K they were asked with): K = `top_k`, or the server's --max-logprobs where
    it refuses more and says how many it allows (adaptive top-K asks for many; vLLM caps).

    Raises:
        QualityUnavailable: refused without saying its limit. ServerError: as `vllm_positions`.
    """
    try:
        return vllm_positions(server, tokens, top_k, model=model), top_k
    except QualityUnavailable as exc:
        cause = exc.__cause__ or exc.__context__
        cap = allowed_max(cause) if isinstance(cause, ServerError) else None
        if cap is None or cap >= top_k:
            raise
    return vllm_positions(server, tokens, cap, model=model), cap


def parse_prompt_logprobs(body: object, tokens: list[int], top_k: int) -> list[Position]:
    """Positions 0 … len(tokens)−2 from vLLM's `choices[0].prompt_logprobs`.

    Raises:
        ServerError: no such list, or not one entry per prompt token.
    """
    choices = dicts(list_field(body, "choices"))
    entries = list_field(choices[0], "prompt_logprobs") if choices else []
    if len(entries) != len(tokens):
        raise ServerError(
            f"quality: /v1/completions gave {len(entries)} prompt_logprobs entries for {len(tokens)} prompt tokens"
        )
    out: list[Position] = []
    for i, entry in enumerate(entries[1:], start=1):
        pairs: list[tuple[int, float]] = []
        own: float | None = None
        for key, item in as_dict(entry).items():
            tok, lp = as_int(key, max=MAX_TOKEN_ID), logprob(as_dict(item).get("logprob"))
            if tok is None or lp is None:
                continue
            pairs.append((tok, lp))
            if tok == tokens[i]:
                own = lp
        if not pairs:
            raise ServerError(f"quality: prompt_logprobs[{i}] has no token id with a log-probability")
        out.append(Position(_top(pairs, top_k), own))
    return out


def vllm_positions(server: PostsJson, tokens: list[int], top_k: int, *, model: str | None = None) -> list[Position]:
    """Every position of `tokens` in one request (`prompt_logprobs: K`, prompt = the ids).

    Raises:
        QualityUnavailable: K is above the server's --max-logprobs.
        ServerError: the request failed or its answer was unusable.
    """
    body: dict[str, Any] = {
        "prompt": tokens,
        "max_tokens": 1,
        "temperature": 0.0,
        "prompt_logprobs": top_k,
        "stream": False,
    }
    if model:
        body["model"] = model
    try:
        answer = server.post_json("/v1/completions", body, ONE_REQUEST_TIMEOUT_S)
    except ServerError as exc:
        why = too_many_logprobs(exc, top_k)
        if why is not None:
            raise why from exc  # the cause keeps vLLM's own words (vllm_positions_capped reads its limit)
        raise
    return parse_prompt_logprobs(answer, tokens, top_k)


def parse_echo(body: object, top_k: int) -> tuple[list[int], list[Position]]:
    """(the prompt's token ids, its positions) from a legacy `echo` + `logprobs` answer.

    Entries past `usage.prompt_tokens` are the generated token's and are dropped.

    Raises:
        ServerError: no `logprobs` lists, lists of unequal length, or a token with no name.
    """
    choices = dicts(list_field(body, "choices"))
    lists = as_dict(choices[0].get("logprobs")) if choices else {}
    names, own = list_field(lists, "tokens"), list_field(lists, "token_logprobs")
    tops = list_field(lists, "top_logprobs")
    if not names or not len(names) == len(own) == len(tops):
        raise ServerError("quality: /v1/completions echo gave no logprobs.tokens/token_logprobs/top_logprobs lists")
    n = as_int(as_dict(as_dict(body).get("usage")).get("prompt_tokens"), min=1) or len(names)
    tokens = [_token_id(t) for t in names[:n]]
    if any(t is None for t in tokens):
        raise ServerError("quality: /v1/completions echo named a token with no text")
    ids = [t for t in tokens if t is not None]
    out: list[Position] = []
    for i in range(1, len(ids)):
        pairs: list[tuple[int, float]] = []
        for key, value in as_dict(tops[i]).items():
            tok, lp = _token_id(key), logprob(value)
            if tok is not None and lp is not None:
                pairs.append((tok, lp))
        if not pairs:
            raise ServerError(f"quality: top_logprobs[{i}] has no token with a log-probability")
        out.append(Position(_top(pairs, top_k), logprob(own[i])))
    return ids, out


def _echo(server: PostsJson, text: str, top_k: int, model: str | None) -> tuple[list[int], list[Position], list[str]]:
    """(ids, positions, token names) of one echo request of `text`.

    Raises:
        QualityUnavailable: the server refused echo with logprobs (HTTP 4xx).
        ServerError: the request failed otherwise, or its answer was unusable.
    """
    body: dict[str, Any] = {
        "prompt": text,
        "echo": True,
        "logprobs": top_k,
        "max_tokens": 1,
        "temperature": 0.0,
        "stream": False,
    }
    if model:
        body["model"] = model
    try:
        answer = server.post_json("/v1/completions", body, ONE_REQUEST_TIMEOUT_S)
    except ServerError as exc:
        if (why := too_many_logprobs(exc, top_k)) is not None:
            raise why from None
        if exc.http_status is not None and 400 <= exc.http_status < 500:
            raise QualityUnavailable(f"the server refused echo + logprobs on /v1/completions ({exc})") from None
        raise
    ids, out = parse_echo(answer, top_k)
    return ids, out, _names(answer, len(ids))


def _names(body: object, n: int) -> list[str]:
    """The first `n` token names of an echo answer, as text ("" for a name that is not a string)."""
    choices = dicts(list_field(body, "choices"))
    names = list_field(as_dict(choices[0].get("logprobs")) if choices else {}, "tokens")[:n]
    return [t if isinstance(t, str) else "" for t in names]


def echo_positions(
    server: PostsJson, text: str, positions: int, top_k: int, *, model: str | None = None
) -> tuple[list[int], list[Position]]:
    """The first `positions` positions of `text` from its start (cut to CHARS_PER_TOKEN_MAX per
    wanted token).

    Raises:
        QualityUnavailable: the server refused echo with logprobs (HTTP 4xx).
        ServerError: the request failed otherwise, or its answer was unusable.
    """
    ids, out, _ = _echo(server, text[: (positions + 1) * CHARS_PER_TOKEN_MAX], top_k, model)
    return ids[: positions + 1], out[:positions]


def echo_windows(
    server: PostsJson, text: str, positions: int, top_k: int, *, model: str | None = None
) -> tuple[Cut, list[Position]]:
    """llama-perplexity's windows through a server that takes text only: one echo request names
    the text's tokens (and whether the server puts a BOS first), then each window is sent as the
    text of its tokens (the server adds the BOS itself) and its scored positions kept. A window
    the server tokenizes otherwise than the whole text cannot be lined up: n/a, with the reason.

    Raises:
        QualityUnavailable: echo refused, token names that do not spell the text, a window
            tokenized otherwise, or a text shorter than a window.
        ServerError: a request failed, or its answer was unusable.
    """
    sent = text[: windows_for(positions) * WINDOW_TOKENS * CHARS_PER_TOKEN_MAX]
    ids, _, names = _echo(server, sent, 1, model)
    if "".join(names) == sent:
        lead = 0
    elif names and "".join(names[1:]) == sent:
        lead = 1  # the first name is a special token the server put before the text
    else:
        raise QualityUnavailable(
            "the server's token names do not spell the text back, so its windows cannot be cut: "
            "use --quality-convention from-start"
        )
    try:
        windows = cut(ids, LLAMA_PERPLEXITY, positions, bos=ids[0] if lead else None)
    except TextTooShort as exc:
        raise QualityUnavailable(str(exc)) from None
    out: list[Position] = []
    for n, w in enumerate(windows.windows):
        start = n * WINDOW_TOKENS + lead
        got, scored, _ = _echo(server, "".join(names[start : (n + 1) * WINDOW_TOKENS]), top_k, model)
        if tuple(got) != w.tokens:
            raise QualityUnavailable(
                f"the server tokenizes window {n + 1}'s text otherwise than the whole text's: its positions cannot "
                "be lined up (use --quality-convention from-start)"
            )
        out += scored[w.first :]
    return windows, out
