"""Each variant's answer to one fixed question: what the weights say, in words (docs/design.md §4
"Answers").

KL divergence and top-1 agreement say how far a quantized model's distributions moved; a user
sees what that means when the answers stand side by side ("Rayleigh scattering" at F16, "a
product of human ingenuity" at 4 bits). The question is asked once per variant, after quality
scoring, greedy (temperature 0) on the chat endpoint so an instruct model answers in its own
template, ending at its own end of turn or `ANSWER_TOKENS`. This is not a timing request:
nothing of it enters a metric.

Where two answers part is found word by word (`diverges_at`): greedy decoding makes the first
different word the point where the variant's most likely token changed, and everything after it
follows from that choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precmon.servers.base import Server, ServerError, StreamRequest

#: The fixed question: one that a 135 M instruct model answers well at F16 and that 4-bit
#: rounding visibly bends (measured on SmolLM2: F16/Q8_0 agree word for word, Q4_0 and MXFP4 part
#: within the first four words).
ANSWER_PROMPT = "Why is the sky blue? Answer in two sentences."
ANSWER_TOKENS = 48
#: The most characters of an answer kept (a server that ignores max_tokens cannot fill a file).
MAX_ANSWER_CHARS = 2000
ANSWER_TIMEOUT_S = 120.0


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


def ask(server: Server, model: str | None, prompt: str = ANSWER_PROMPT) -> Answer:
    """The server's greedy answer to `prompt`; an Answer with `error` where it gave none."""
    req = StreamRequest(
        prompt=prompt,
        max_tokens=ANSWER_TOKENS,
        model=model,
        ignore_eos=False,
        temperature=0.0,
        timeout_s=ANSWER_TIMEOUT_S,
        endpoint="chat",
    )
    try:
        res = server.stream(req)
    except ServerError as exc:
        return Answer(prompt, None, error=str(exc)[:300])
    if res.error:
        return Answer(prompt, None, error=res.error[:300])
    text = res.text.strip()
    if not text:
        return Answer(prompt, None, res.completion_tokens, res.finish_reason, error="the server answered no text")
    return Answer(prompt, text[:MAX_ANSWER_CHARS], res.completion_tokens, res.finish_reason)


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
