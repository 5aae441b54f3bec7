"""Prompts of an exact token count that no prefix cache can serve.

Every prompt starts with a fresh nonce, so a server's prefix cache (vLLM, SGLang, llama.cpp
slots, Ollama) has nothing to reuse: the very first tokens differ. The filler after it is
ordinary English words. With the server's own tokenizer we hit the target count exactly (BOS
included, as the server's usage counts it); without one we use a calibrated words-per-token
estimate and report the real count from the server's usage.

On a chat endpoint the server wraps the prompt in its chat template, which adds a fixed number of
tokens (`PromptBuilder.template_tokens`, measured once per bench from usage.prompt_tokens): the
content is then built that much shorter, so the prompt the server processes has the target size,
and the nonce stays at the start of the content (docs/design.md §4, "Chat endpoint").
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass

WORDS = (
    "time year people way day man thing woman life child world school state family student group "
    "country problem hand part place case week company system program question work government "
    "number night point home water room mother area money story fact month lot right study book "
    "eye job word business issue side kind head house service friend father power hour game line "
    "end member law car city community name president team minute idea kid body information back "
    "parent face others level office door health person art war history party result change "
    "morning reason research girl guy moment air teacher force education foot boy age policy "
    "music market sense nation plan college interest death experience effect use class control "
    "care field development role effort rate heart drug show leader light voice wife police mind "
    "price report decision son view relationship town road arm difference value building action "
    "model season society tax director position player record paper space ground form event "
    "official matter center couple site project activity star table need court oil situation cost "
    "industry figure street image phone data picture practice piece land product doctor wall "
    "patient worker news test movie north love support technology step baby computer type "
    "attention film tree source organization hair window evidence population site river summer"
).split()


NEAR_STEPS = 6  # tokenizer requests the stepping search may use before it falls back to bisection
NEAR_PAD = 8  # tokens short of the target that " ." padding closes


class PromptError(ValueError):
    """No prompt of the asked size can be built with this server's tokenizer."""


def make_nonce() -> str:
    return secrets.token_hex(6)


def filler_words(n: int, seed: str) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(n)]


@dataclass(frozen=True)
class Prompt:
    text: str
    nonce: str
    target_tokens: int
    expected_tokens: int | None  # the server tokenizer's count, None when estimated


class PromptBuilder:
    """Builds prompts of a target token count.

    Args:
        count_tokens: the server's token count of a text (BOS included), or None to estimate.
        tokens_per_word: the estimate used without a tokenizer; `calibrate` refines it.
    """

    def __init__(self, count_tokens: Callable[[str], int] | None, tokens_per_word: float = 1.3) -> None:
        self.count_tokens = count_tokens
        self.tokens_per_word = tokens_per_word
        self._words_for: dict[int, int] = {}  # target → word count that fitted last time
        self.template_tokens = 0  # what a chat template adds around the content (0: completions)

    def calibrate(self, n_words: int, measured_tokens: int) -> None:
        if n_words > 0 and measured_tokens > 0:
            self.tokens_per_word = measured_tokens / n_words

    def _text(self, nonce: str, words: list[str], k: int, pad: int) -> str:
        # No trailing space after a bare nonce: inside a chat template a space before the suffix
        # tokenizes differently than at the end of a text (measured count one off on llama.cpp).
        return " ".join([f"[{nonce}]", *words[:k]]) + " ." * pad

    def build(self, target_tokens: int, nonce: str | None = None) -> Prompt:
        """A prompt the server will count as `target_tokens` (template included, on chat)."""
        over = self.template_tokens
        if over <= 0:
            return self._build(target_tokens, nonce)
        if target_tokens - over < 2:
            raise PromptError(
                f"cannot build a {target_tokens}-token chat prompt: the chat template alone takes {over} tokens"
            )
        p = self._build(target_tokens - over, nonce)
        expected = None if p.expected_tokens is None else p.expected_tokens + over
        return Prompt(p.text, p.nonce, target_tokens, expected)

    def _build(self, target_tokens: int, nonce: str | None = None) -> Prompt:
        """A text of `target_tokens` by the server's tokenizer (or the estimate)."""
        nonce = nonce or make_nonce()
        max_words = int(target_tokens / max(self.tokens_per_word, 0.2)) + 64
        words = filler_words(max_words * 2 + 64, nonce)
        if self.count_tokens is None:
            k = max(1, round(target_tokens / self.tokens_per_word) - 4)
            return Prompt(self._text(nonce, words, k, 0), nonce, target_tokens, None)
        count = self.count_tokens
        # Most builds take one or two tokenizer requests: start from the word count that fitted
        # this size last time (or the estimate) and step by the measured tokens per word; a fresh
        # nonce moves the count by a token or two, which padding absorbs. The bisection below
        # stays the fallback for a tokenizer this does not fit.
        near = self._near(count, nonce, words, target_tokens)
        if near is not None:
            return near
        lo, hi = 0, len(words)
        limit = len(words) * 8  # our estimate is off by 8×: the tokenizer is not counting words
        while count(self._text(nonce, words, hi, 0)) <= target_tokens:
            if len(words) >= limit:
                raise PromptError(
                    f"cannot build a {target_tokens}-token prompt: the server's tokenizer "
                    f"counts no more than {count(self._text(nonce, words, hi, 0))} tokens "
                    f"for {hi} words"
                )
            words = words + filler_words(len(words), nonce + str(hi))
            lo, hi = hi, len(words)
        # Largest k whose text has at most target tokens.
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(self._text(nonce, words, mid, 0)) <= target_tokens:
                lo = mid
            else:
                hi = mid - 1
        k = lo
        best_text, best_n = self._text(nonce, words, k, 0), count(self._text(nonce, words, k, 0))
        pad = 0
        while best_n < target_tokens and pad < 64:
            pad += 1
            text = self._text(nonce, words, k, pad)
            n = count(text)
            if n > target_tokens:
                break
            best_text, best_n = text, n
        if best_n == target_tokens:
            self._words_for[target_tokens] = k
        return Prompt(best_text, nonce, target_tokens, best_n)

    def _near(self, count: Callable[[str], int], nonce: str, words: list[str], target: int) -> Prompt | None:
        """The prompt found by stepping from the last fit, or None (then bisect).

        Words are stepped until the text is at most NEAR_PAD tokens short of the target, then
        " ." pads (one token each with the tokenizers seen) close the gap; at most NEAR_STEPS
        tokenizer requests in all.
        """
        k = self._words_for.get(target) or max(1, round(target / max(self.tokens_per_word, 0.2)) - 4)
        calls = 0
        n = -1
        while calls < NEAR_STEPS:
            k = min(max(k, 1), len(words))
            n = count(self._text(nonce, words, k, 0))
            calls += 1
            if target - NEAR_PAD <= n <= target:
                break
            per_word = max(n / k, 0.2)
            step = round((target - n) / per_word)
            step = min(step, -1) if n > target else max(step, 1)
            if n < target and k == len(words):
                return None
            k += step
        else:
            return None
        pad = target - n
        while calls < NEAR_STEPS:
            text = self._text(nonce, words, k, pad)
            got = n if pad == 0 else count(text)
            calls += pad > 0
            if got == target:
                self._words_for[target] = k
                return Prompt(text, nonce, target, got)
            if pad == 0 or got > target + NEAR_PAD or got < n:
                return None
            pad += target - got
            if pad < 0 or pad > 64:
                return None
        return None
