"""How many tokens a server's chat template adds around a prompt, measured once per bench.

On `--endpoint chat` the server wraps our content in the model's chat template (`<s>[INST] … [/INST]`,
`<|im_start|>user\n…<|im_end|>\n<|im_start|>assistant\n`). Those tokens are prompt tokens the
server processes, so a "512-token prefill" on chat is 512 tokens by usage.prompt_tokens, template
included (docs/design.md §4 "Chat endpoint"). We learn the template's size from the server itself:
one unmeasured chat request with a short content and `max_tokens` 1, its usage.prompt_tokens minus
the tokenizer's count of the content (BOS included, since the template carries the BOS the
tokenizer added). The prompt builder then makes the content that much shorter.

The template's tokens are the same for every request (a fixed prefix and suffix around content
that starts with a fresh nonce), which the real servers confirm: llama.cpp and vLLM count
exactly content + template for every nonce.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.measure.prompts import PromptBuilder, filler_words, make_nonce
from precmon.servers.base import Server, StreamRequest

PROBE_WORDS = 8


@dataclass(frozen=True)
class TemplateSize:
    """`tokens` the template adds (0 when unknown), where the figure came from, and why it is unknown."""

    tokens: int
    source: str
    problem: str | None = None


def measure_template(server: Server, builder: PromptBuilder, model: str | None, timeout_s: float) -> TemplateSize:
    """One 1-token chat request; its prompt count minus the content's (ServerError propagates).

    Without a tokenizer the content's count is the builder's estimate, so the size is too.
    """
    nonce = make_nonce()
    content = f"[{nonce}] " + " ".join(filler_words(PROBE_WORDS, nonce))
    if builder.count_tokens is not None:
        content_tokens = builder.count_tokens(content)
        how = "the tokenizer's count of its content"
    else:
        content_tokens = round((PROBE_WORDS + 1) * builder.tokens_per_word) + 1
        how = "an estimate of its content (no tokenizer endpoint)"
    req = StreamRequest(prompt=content, max_tokens=1, model=model, nonce=nonce, timeout_s=timeout_s, endpoint="chat")
    res = server.stream(req)
    source = f"usage.prompt_tokens of a 1-token chat request minus {how}"
    if res.error or not res.prompt_tokens:
        why = res.error or "no usage.prompt_tokens"
        return TemplateSize(0, source, f"chat template size unknown ({why}): chat prompts are that much longer")
    extra = res.prompt_tokens - content_tokens
    if extra < 0:
        return TemplateSize(
            0,
            source,
            f"chat template size unknown (the server counted {res.prompt_tokens} prompt tokens for "
            f"{content_tokens} of content)",
        )
    return TemplateSize(extra, source)
