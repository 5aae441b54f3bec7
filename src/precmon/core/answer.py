"""A variant's `answer` object (docs/design.md §5): its greedy answer to the fixed question, as
the results file holds it, read back without trust, and where two answers part.

measure/answer.py asks the question and makes an `Answer`; the report reads the file's with
`read_answer` and compares them with `diverges_at`. Greedy decoding makes the first different
word the point where the variant's most likely token changed, and everything after it follows
from that choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The most tokens an answer may have (written beside it as `max_tokens`).
ANSWER_TOKENS = 48
#: The most characters of an answer kept (a server that ignores max_tokens cannot fill a file).
MAX_ANSWER_CHARS = 2000


@dataclass(frozen=True)
class Answer:
    """One variant's answer (the `answer` object of a variant in the results file)."""

    prompt: str
    text: str | None
    tokens: int | None = None  # the server's usage.completion_tokens
    finish_reason: str | None = None
    error: str | None = None  # why there is no text (one line)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt": self.prompt, "text": self.text, "max_tokens": ANSWER_TOKENS}
        if self.tokens is not None:
            out["tokens"] = self.tokens
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.error is not None:
            out["error"] = self.error
        return out


def read_answer(obj: object) -> Answer | None:
    """An `answer` object of a results file, None where it is not one (files are untrusted)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
        return None
    text = obj.get("text")
    tokens = obj.get("tokens")
    reason = obj.get("finish_reason")
    error = obj.get("error")
    return Answer(
        obj["prompt"],
        text[:MAX_ANSWER_CHARS] if isinstance(text, str) and text else None,
        tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None,
        reason if isinstance(reason, str) else None,
        error if isinstance(error, str) else (None if isinstance(text, str) and text else "no text recorded"),
    )


def diverges_at(baseline: str, text: str) -> int | None:
    """The 0-based index of the first word where `text` parts from `baseline`; None when the two
    are the same words. One that stops where the other goes on parts where it stopped."""
    a, b = baseline.split(), text.split()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))
