"""The server protocol: what precmon needs from any LLM server, and what one request yields.

An adapter turns one server's wire format into `StreamResult`: the arrival time of every chunk
that carried generated text, the server's own usage counts and timings. All timing is taken on
the client with `time.perf_counter()` as the bytes arrive; token counts come from the server's
usage, never from counting chunks (one chunk can carry several tokens).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class ServerError(RuntimeError):
    """The server could not be reached, answered with an error, or broke its protocol.

    The message is one line a user can act on (it names the URL and what went wrong).
    `http_status` is set when the server answered with an HTTP error status.
    """

    def __init__(self, message: str, http_status: int | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status

    @property
    def rejected_request(self) -> bool:
        """The server is up but refused this one request (4xx): the next request may well work."""
        status = self.http_status
        if status is None and str(self).startswith("HTTP 4"):  # adapters that only format the message
            return True
        return status is not None and 400 <= status < 500


@dataclass(frozen=True)
class StreamRequest:
    """One generation request, server-neutral.

    `endpoint` "completions" sends `prompt` as it is; "chat" sends it as the content of one user
    message (`/v1/chat/completions`, Ollama `/api/chat`): the server adds its chat template's
    tokens, and usage.prompt_tokens counts them.
    """

    prompt: str
    max_tokens: int
    model: str | None = None
    nonce: str | None = None  # per-request salt (vLLM/SGLang `cache_salt`)
    ignore_eos: bool = True
    temperature: float = 0.0
    timeout_s: float = 300.0  # total deadline from sending to the last byte, not per read
    endpoint: str = "completions"  # or "chat" (`precmon.servers.kinds.ENDPOINTS`)
    # Context depth (docs/design.md §4 "Context depth"): the prompt's prefix is meant to come from
    # the server's prompt cache. llama.cpp then gets `cache_prompt: true` and `id_slot` 0 (the
    # fill and the measured requests share one slot); salted servers share `nonce` as the salt.
    reuse_prefix: bool = False


@dataclass
class StreamResult:
    """What one streamed request produced, timed on the client."""

    sent_s: float  # perf_counter() when the request was sent
    http_status: int | None = None
    first_text_s: float | None = None  # first chunk with generated text (content or reasoning)
    first_content_s: float | None = None  # first chunk with non-reasoning content (TTFO)
    last_text_s: float | None = None  # last chunk with generated text
    finish_s: float | None = None  # first chunk carrying a finish_reason
    text_chunk_times_s: list[float] = field(default_factory=list)
    n_chunks: int = 0
    text_parts: list[str] = field(default_factory=list)  # generated content, one piece per chunk
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    finish_reason: str | None = None
    server_timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # a broken stream after a 200 (truncated, malformed)
    done_s: float | None = None
    # what the adapter had to change about the request (a field the server refuses), one line each
    notes: list[str] = field(default_factory=list)

    def add_text(self, now_s: float, content: str, reasoning: str = "", *, token: bool = False) -> None:
        """A chunk carrying generated text arrived at `now_s` (reasoning text counts for TTFT).

        `token=True`: the chunk is one generated token even without text to show (TGI sends
        EOS as a token event): it is timed like text.
        """
        if not (content or reasoning or token):
            return
        if self.first_text_s is None:
            self.first_text_s = now_s
        if content and self.first_content_s is None:
            self.first_content_s = now_s
        self.last_text_s = now_s
        self.text_chunk_times_s.append(now_s)
        self.text_parts.append(content)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_text_s is None else self.first_text_s - self.sent_s


@dataclass(frozen=True)
class ModelInfo:
    """What a server can tell about a model. Unknown fields are None, never guessed."""

    name: str
    size_bytes: int | None = None
    n_params: int | None = None
    context_tokens: int | None = None
    quantization: str | None = None  # as the server names it: "Q4_K_M", "fp8", ...
    dtype: str | None = None
    loaded: bool | None = None
    source: str | None = None  # where the facts came from (endpoint names)
    model_path: str | None = None  # the file the server loaded, as it names it (llama.cpp `/props`)
    notes: str | None = None  # optional endpoints that gave nothing, and what is n/a because of it
    vocab_size: int | None = None  # tokens in the model's vocabulary (llama.cpp: `/v1/models` meta `n_vocab`)


class Server(Protocol):
    """One running LLM server: everything its callers (measure, sweep, cli, tui) use of an adapter.

    Implemented by the protocol classes (`precmon.servers.adapter.Adapter` and its subclasses,
    one per kind in `precmon.servers.kinds`); `precmon.servers.detect.make_server` returns one.
    `url` is credential-redacted. Methods raise only `ServerError`; optional facts a server does
    not give are None.
    """

    kind: str
    url: str

    def health(self) -> bool: ...

    def version(self) -> str | None: ...

    def list_models(self) -> list[ModelInfo]: ...

    def model_info(self, model: str | None) -> ModelInfo | None: ...

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        """Token ids as the server counts prompt tokens (BOS included), or None if unsupported."""
        ...

    def stream(self, req: StreamRequest) -> StreamResult: ...

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        """Make `model` the one in memory (router/Ollama switching); load time is not measured."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class ReportsFlags(Protocol):
    """A server that can say how it was started (docs/design.md §5 `variant.server.flags`).

    `server_flags(model)` returns flag name → value (numbers, strings, booleans), only the ones
    the server told, and `flags_source` names where they came from ("/props"). Never raises: a
    server that tells nothing gives `{}`. Checked with isinstance, so a `Server` need not have it.
    """

    flags_source: str | None

    def server_flags(self, model: str | None) -> dict[str, object]: ...


@runtime_checkable
class ErasesSlots(Protocol):
    """A server whose per-slot prompt caches can be emptied (llama-server's `/slots/{id}?action=erase`).

    `erase_slot(id_slot)` returns the cells it held (None if the server did not say) and raises
    `ServerError` when the server refuses. Checked with isinstance (measure/depth/slots.py), so a
    wrapper must have the method only where the server it wraps has it
    (`tui/workers/background.abortable`).
    """

    def erase_slot(self, id_slot: int) -> int | None: ...
