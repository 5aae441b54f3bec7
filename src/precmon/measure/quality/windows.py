"""Which positions of the evaluation text are scored, and with how much context (docs/design.md §4).

Two conventions (`quality_convention`):

- **llama-perplexity** (the default): the scoring of `llama-perplexity --kl-divergence -c 512`,
  the tool behind every KL table users compare with (quant makers' model cards, llama.cpp
  discussions). The text's token ids (tokenized with the model's special tokens, so a BOS comes
  first where the model adds one) are cut into windows of WINDOW_TOKENS; each window is given to
  the model on its own, its first token replaced by the BOS where the model adds one (window 0
  starts with it already), and only its second half is scored: positions WINDOW/2 … WINDOW − 2,
  each predicting the next token, so every scored token has at least WINDOW/2 tokens of context.
  A window scores WINDOW − 1 − WINDOW/2 positions (255 of 512); `quality_positions` P asks for
  ⌈P / 255⌉ windows, all scored whole. A text too short for them gives the windows it has (a
  note says how many); one shorter than a window cannot be scored this way (n/a, naming
  `--quality-convention from-start`).
- **from-start**: positions 0 … P − 1 of the text as one sequence from its first token (precmon's
  scoring before the convention existed, kept for short texts): early positions see little
  context, so their KL runs higher than llama-perplexity's (1.1-1.4× on SmolLM2-135M).

Results files written before `quality.convention` existed used from-start (codec: `legacy`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from precmon.core.settings import QUALITY_CONVENTIONS, QUALITY_WINDOW_TOKENS

CONVENTIONS = QUALITY_CONVENTIONS
LLAMA_PERPLEXITY, FROM_START = CONVENTIONS
#: llama-perplexity's `-c` in every published table this is compared with.
WINDOW_TOKENS = QUALITY_WINDOW_TOKENS


class TextTooShort(ValueError):
    """The text has fewer tokens than one window; str() says so and what to do (one line)."""


@dataclass(frozen=True)
class Window:
    """One sequence given to the model, and where its scored positions start.

    Attributes:
        tokens: the ids the model is given (a llama-perplexity window's first one is the BOS
            where the model adds one).
        first: the first scored position: position i (first ≤ i ≤ len − 2) is the distribution
            after tokens[: i + 1], predicting tokens[i + 1].
    """

    tokens: tuple[int, ...]
    first: int

    @property
    def positions(self) -> int:
        return len(self.tokens) - 1 - self.first


def per_window(window: int = WINDOW_TOKENS) -> int:
    """Positions a llama-perplexity window scores: its second half less the last token."""
    return window - 1 - window // 2


def windows_for(positions: int, window: int = WINDOW_TOKENS) -> int:
    """How many llama-perplexity windows `positions` scored positions need (at least one)."""
    return max(1, math.ceil(positions / per_window(window)))


@dataclass(frozen=True)
class Cut:
    """The windows cut from a text's ids, the ids they were cut from, a note when the text gave
    fewer positions than asked (None otherwise), and the BOS each window starts with (None: none)."""

    windows: tuple[Window, ...]
    tokens: tuple[int, ...]
    note: str | None = None
    bos: int | None = None

    @property
    def positions(self) -> int:
        return sum(w.positions for w in self.windows)


def cut(
    tokens: Sequence[int],
    convention: str,
    positions: int,
    *,
    window: int = WINDOW_TOKENS,
    bos: int | None = None,
    max_windows: int | None = None,
) -> Cut:
    """The windows of `convention` for `positions` scored positions of the text's ids `tokens`.

    `bos`: the id the model puts first (None: it adds none). `max_windows`: at most this many
    (a llama-perplexity base file holds a fixed number).

    Raises:
        TextTooShort: llama-perplexity's convention on fewer than `window` tokens.
        ValueError: an unknown convention.
    """
    ids = tuple(tokens)
    if convention == FROM_START:
        used = ids[: positions + 1]
        note = None
        if len(used) - 1 < positions:
            note = f"the text has {len(ids)} tokens: {max(0, len(ids) - 1)} positions, not {positions}"
        return Cut((Window(used, 0),), used, note)
    if convention != LLAMA_PERPLEXITY:
        raise ValueError(f"unknown quality convention {convention!r}")
    have = len(ids) // window
    if have == 0:
        raise TextTooShort(
            f"the text has {len(ids)} tokens, fewer than one {window}-token window of llama-perplexity's "
            "convention: give a longer --quality-text, or score from its start (--quality-convention from-start)"
        )
    need = windows_for(positions, window)
    if max_windows is not None:
        need = min(need, max_windows)
    n = min(need, have)
    out = []
    for w in range(n):
        chunk = ids[w * window : (w + 1) * window]
        if bos is not None:
            chunk = (bos, *chunk[1:])
        out.append(Window(chunk, window // 2))
    note = None
    if n < need:
        note = (
            f"the text has {len(ids)} tokens: {n} window{'s' if n != 1 else ''} of {window} "
            f"({n * per_window(window)} positions), not the {need} that {positions} positions need"
        )
    return Cut(tuple(out), ids[: n * window], note, bos)
