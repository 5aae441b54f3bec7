"""What each server kind is called where a person reads it (`llama.cpp`, not `llamacpp`).

The kinds and what each can do are `precmon.servers.kinds`'s records; their display names live
here, below them, because the report reads only the core (docs/design.md §2) and names a
variant's server from the results file's `server.kind`. `ServerKind.display` reads this table,
and a test holds its keys to the kinds' names, so a kind is named in one place.
"""

from __future__ import annotations

DISPLAY_NAMES: dict[str, str] = {
    "openai": "OpenAI API",
    "vllm": "vLLM",
    "llamacpp": "llama.cpp",
    "ollama": "Ollama",
    "sglang": "SGLang",
    "lmstudio": "LM Studio",
    "tgi": "TGI",
}
