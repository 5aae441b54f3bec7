"""Ask the server for the distributions of every scored position (docs/design.md §4 "Quality").

The windows (measure/quality/windows.py) come from the reference, checked against this server's
token ids (another vocabulary, another BOS, another tokenization: n/a, with the reason), or are cut
from them for the baseline; the server kind's method (its record's `quality`: servers/kinds.py)
fills them (measure/quality/collect.py; the legacy `echo`: fetch_openai.py). The baseline's lists
are then cut to the adaptive target, a variant's to the baseline's sizes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from precmon.measure.quality.adaptive import cut_to, trim
from precmon.measure.quality.collect import collect, first_token_added
from precmon.measure.quality.fetch import PostsJson, QualityStopped, QualityUnavailable
from precmon.measure.quality.fetch_openai import CHARS_PER_TOKEN_MAX, echo_positions, echo_windows
from precmon.measure.quality.reference import Reference, text_sha256
from precmon.measure.quality.score import Position
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import FROM_START, LLAMA_PERPLEXITY, Cut, TextTooShort, cut
from precmon.servers.kinds import capabilities

#: (done, total, text) like the bench plan's progress; text reads "quality 120/510".
SayFn = Callable[[int, int, str], None]


def _tokens_problem(tokens: list[int] | None, reference: Reference | None) -> str | None:
    """Why these token ids cannot be scored (too few; not the baseline's), or None."""
    if not tokens or len(tokens) < 2:
        return "the server tokenized the text into fewer than 2 tokens"
    if reference is not None and tokens[: len(reference.tokens)] != list(reference.tokens):
        ref_tokens = reference.tokens
        at = next((i for i, (a, b) in enumerate(zip(tokens, ref_tokens, strict=False)) if a != b), len(tokens))
        return f"the tokenizer differs from the baseline's at token {at}"
    return None


def _reference_problem(srv: PostsJson, model: str | None, reference: Reference, bos: int | None) -> str | None:
    """Why the server's model cannot be scored against `reference` (another vocabulary, another
    BOS), or None."""
    if reference.n_vocab is not None:
        info = getattr(srv, "model_info", lambda m: None)(model)
        served = getattr(info, "vocab_size", None)
        if isinstance(served, int) and served != reference.n_vocab:
            return (
                f"{reference.label} was written by a model of {reference.n_vocab} tokens, the served one has "
                f"{served}: another vocabulary"
            )
    if reference.bos_known and reference.bos != bos:
        said = "no BOS" if reference.bos is None else f"BOS {reference.bos}"
        return f"the baseline's windows begin with {said}, this server's with {'none' if bos is None else bos}"
    return None


def _windows(
    srv: PostsJson,
    settings: QualitySettings,
    model: str | None,
    reference: Reference | None,
    convention: str,
    want: int,
) -> Cut:
    """The windows to score: the reference's (checked against this server's tokens), else cut
    from this server's tokens of the text.

    Raises:
        QualityUnavailable: the text or the tokenization cannot be scored (the reason).
    """
    tokens = srv.tokenize(settings.text, model)
    why = _tokens_problem(tokens, reference)
    if why or tokens is None:
        raise QualityUnavailable(why or "no tokens")
    bos = first_token_added(srv, model, tokens) if convention == LLAMA_PERPLEXITY else None
    if reference is not None and (why := _reference_problem(srv, model, reference, bos)):
        raise QualityUnavailable(why)
    try:
        return reference.cut(bos) if reference is not None else cut(tokens, convention, want, bos=bos)
    except TextTooShort as exc:
        raise QualityUnavailable(str(exc)) from None


@dataclass(frozen=True)
class Fetched:
    """What the server gave: the windows and their positions, notes, and the most K asked."""

    windows: Cut
    positions: list[Position]
    notes: list[str]
    top_k: int


def gather(
    srv: PostsJson,
    settings: QualitySettings,
    model: str | None,
    reference: Reference | None,
    say: SayFn | None,
    stop: threading.Event | None,
) -> Fetched:
    """The windows (measure/quality/windows.py) and their positions, by the server kind's
    method (its record's `quality`: servers/kinds.py); the baseline's lists cut to the adaptive
    target, a variant's to the baseline's sizes.

    Raises:
        QualityUnavailable: the text or the tokenization cannot be scored (the reason).
        QualityStopped, ServerError: as the fetchers raise them.
    """
    if reference is not None and reference.text_sha256 not in (None, text_sha256(settings.text)):
        raise QualityUnavailable(f"the reference was made from another text ({reference.text})")
    sizes = [len(p.top) for p in reference.positions] if reference is not None else None
    method = capabilities(srv.kind).quality
    convention = reference.convention if reference is not None else settings.convention
    adaptive = settings.target_mass > 0 and method != "echo"  # the legacy completions' echo lists ≤ 5
    top_k = max(sizes) if sizes else (max(settings.top_k, settings.top_k_max) if adaptive else settings.top_k)
    want = len(reference.positions) if reference is not None else settings.positions
    step = max(1, want // 20)

    def progress(done: int, total: int) -> None:
        if say is not None and (done % step == 0 or done == total):
            say(done, total, f"quality {done}/{total}")

    if stop is not None and stop.is_set():  # the one-request methods check only here
        raise QualityStopped()
    progress(0, want)
    if method == "echo":  # the server tokenizes in the same request
        windows, positions = _echo_fetch(srv, settings.text, convention, want, top_k, model, reference)
        asked = answered = top_k
    else:
        windows = _windows(srv, settings, model, reference, convention, want)
        router = bool(getattr(srv, "is_router", lambda: False)())
        got = collect(
            srv, str(method), windows, sizes or top_k, model=model, router=router, progress=progress, stop=stop
        )
        positions, asked, answered = got.positions, got.asked, got.answered
    notes = [windows.note] if windows.note else []
    if answered < asked:
        notes.append(
            f"vLLM's --max-logprobs capped the top-K at {answered} (asked {asked}): start vLLM with "
            f"--max-logprobs {asked} so the listed tokens can hold {settings.target_mass:.0%} of the probability"
        )
    if sizes:
        positions = cut_to(positions, sizes[: len(positions)])
    elif adaptive:
        positions = trim(positions, settings.target_mass, settings.top_k)
    progress(len(positions), len(positions))
    return Fetched(windows, positions, notes, answered)


def _echo_fetch(
    srv: PostsJson, text: str, convention: str, want: int, top_k: int, model: str | None, reference: Reference | None
) -> tuple[Cut, list[Position]]:
    """The windows and positions of a server that takes text only (the legacy `echo`)."""
    if convention == LLAMA_PERPLEXITY:
        windows, positions = echo_windows(srv, text, want, top_k, model=model)
    else:
        tokens, positions = echo_positions(srv, text, want, top_k, model=model)
        windows = cut(tokens, FROM_START, want)
        if windows.note:
            chars = CHARS_PER_TOKEN_MAX * (want + 1)
            said = f"the text's first {chars} characters have"
            windows = replace(windows, note=windows.note.replace("the text has", said))
    why = _tokens_problem(list(windows.tokens), reference)
    if why:
        raise QualityUnavailable(why)
    return windows, positions
