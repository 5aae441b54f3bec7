"""What every protocol class shares: its HTTP client, optional endpoints, detection hooks.

A protocol class (OpenAI, llama.cpp, Ollama, TGI, ...) knows paths and JSON shapes; bytes
travel through its `HttpClient`. Endpoints a measurement does not need (`/api/ps`, `/props`,
`/version`, `/api/show`, `/metrics`, `/slots`) are read with `optional_json`: when one fails, the
fact it would give is n/a, the reason goes to `notes` (and into `ModelInfo.notes`), and the
measurement goes on.

Detection (`precmon.servers.detect`) asks each class, in the registry's order
(`precmon.servers.kinds`), to recognise the answer to its `probe_path`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.wire.http import HttpClient, excerpt

NOTES_LIMIT = 8


class Adapter:
    """Base of the protocol classes: an `HttpClient`, defaults for what a server cannot do."""

    kind: str = "openai"
    health_path: ClassVar[str] = "/v1/models"
    probe_path: ClassVar[str | None] = None  # detection: GET this, then `recognises(status, body)`
    confirm_path: ClassVar[str | None] = None  # ...and, if set, GET this too: `confirms(status, body)`
    flags_source: str | None = None  # where `server_flags` reads them (base.ReportsFlags)

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        self.http = HttpClient(url, api_key, timeout_s)
        self.url = self.http.url  # credentials redacted: safe to store in results and print
        self.timeout_s = timeout_s
        self.notes: list[str] = []  # optional endpoints that gave nothing, and why

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        """True when `GET probe_path` answered the way only this kind of server does."""
        return False

    @staticmethod
    def confirms(status: int, body: object) -> bool:
        """True when `GET confirm_path` shows the API a bench uses works (detection's second look)."""
        return True

    # ---- plain requests, each whole within min(its own limit, --timeout) -------------------
    def cap(self, timeout_s: float) -> float:
        return min(timeout_s, self.timeout_s)

    def get_json(self, path: str, timeout_s: float = 10.0) -> object:
        return self.http.get_json(path, self.cap(timeout_s))

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        return self.http.post_json(path, payload, self.cap(timeout_s))

    def optional_json(self, path: str, lacks: str, timeout_s: float = 10.0) -> object | None:
        """GET an endpoint the measurement can do without: None (and a note) when it fails.

        Args:
            path: the endpoint.
            lacks: what is n/a without it, for the note ("context length, loaded state").
        """
        try:
            return self.get_json(path, timeout_s)
        except ServerError as exc:
            self.note(f"{path} unavailable ({excerpt(str(exc), 120)}): {lacks} n/a")
            return None

    def note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < NOTES_LIMIT:
            self.notes.append(text)

    def notes_text(self) -> str | None:
        """The notes as one string for `ModelInfo.notes`, None when nothing degraded."""
        return "; ".join(self.notes) or None

    # ---- the Server protocol, with what a server that tells nothing gives ------------------
    def health(self) -> bool:
        """True when `health_path` answers 200, False when it answers anything else (loading: 503).

        A server that cannot be reached raises the ServerError (cannot connect, timed out) for the
        caller to show: "not healthy (still loading a model?)" would send the user to wait for a
        server that is down. A stale keep-alive connection is retried once.
        """
        return self.http.get(self.health_path, self.cap(5.0)).status == 200

    def server_flags(self, model: str | None) -> dict[str, object]:
        """How the server was started, where it tells (base.ReportsFlags); `{}` here."""
        return {}

    def version(self) -> str | None:
        return None

    def list_models(self) -> list[ModelInfo]:
        return []

    def model_info(self, model: str | None) -> ModelInfo | None:
        models = self.list_models()
        if not models:
            return None
        if model is None:
            return models[0]
        return next((m for m in models if m.name == model), None)

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        return None

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        return None

    def stream(self, req: StreamRequest) -> StreamResult:
        raise NotImplementedError

    def close(self) -> None:
        self.http.close()
