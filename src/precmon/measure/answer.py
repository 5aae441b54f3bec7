"""Each variant's answer to one fixed question: what the weights say, in words (docs/design.md §8
"Answers").

KL divergence and top-1 agreement say how far a quantized model's distributions moved; a user
sees what that means when the answers stand side by side ("Rayleigh scattering" at F16, "a
product of human ingenuity" at 4 bits). The question is asked once per variant, after quality
scoring, greedy (temperature 0) on the chat endpoint so an instruct model answers in its own
template, ending at its own end of turn or `ANSWER_TOKENS`. This is not a timing request:
nothing of it enters a metric.

The `answer` object itself (`Answer`, read back by `read_answer`, compared by `diverges_at`) is
core/answer.py's: the report reads it too.
"""

from __future__ import annotations

from precmon.core.answer import ANSWER_TOKENS, MAX_ANSWER_CHARS, Answer
from precmon.servers.base import Server, ServerError, StreamRequest

#: The fixed question: one that a 135 M instruct model answers well at F16 and that 4-bit
#: rounding visibly bends (on SmolLM2 the 8-bit answer keeps the F16 words, the 4-bit ones part
#: within a few words).
ANSWER_PROMPT = "Why is the sky blue? Answer in two sentences."
ANSWER_TIMEOUT_S = 120.0


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
