"""Threads the TUI can always walk away from: quitting never waits on a server.

Textual's thread workers run in asyncio's default executor, and `asyncio.run` joins that executor
when the app returns, with no time limit (Python 3.11): one request stalled on a server that
accepts and never answers kept precmon on a blank screen forever, and a second Ctrl-C landed in
`threading._shutdown`. So the workers here run on daemon threads that they start themselves, and
every blocking call to a server goes through `AbortableServer`, which a quit can abandon at once:
the measuring thread gets a `ServerError` (so a bench ends the normal way, summarising and saving
what was measured), while the HTTP call left behind finishes or dies with the process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from textual.message import Message

from precmon.servers.base import ErasesSlots, ModelInfo, ReportsFlags, Server, ServerError, StreamRequest, StreamResult

T = TypeVar("T")
Post = Callable[[Message], object]  # App.post_message: safe to call from any thread

ABANDONED = "stopped: precmon is quitting (the request in flight was abandoned)"


class Quitting:
    """One flag the whole app's threads share: set once, when the app quits."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    @property
    def is_set(self) -> bool:
        return self.event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking at once on quit (True then)."""
        return self.event.wait(seconds)

    def spawn(self, name: str, target: Callable[[], None]) -> threading.Thread:
        """Start `target` on a daemon thread that quitting may leave behind."""
        thread = threading.Thread(target=target, name=f"precmon-{name}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return thread

    def set(self) -> None:
        self.event.set()

    def join(self, timeout_s: float) -> list[str]:
        """Wait, at most `timeout_s` in all, for the threads to end; the names of those still running."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in threads if t.is_alive()]


def abortable(server: Server, abort: threading.Event) -> AbortableServer:
    """`server` wrapped so that quitting abandons its calls, keeping what isinstance sees of it:
    a llama-server's slot erase (`ErasesSlots`) stays; a server without one gets a wrapper without
    one. A plain `AbortableServer` of a llama-server would hide the erase, and the TUI's depth
    steps would run on the other slots' cached cells (measure/depth/slots.py)."""
    if isinstance(server, ErasesSlots):
        return _AbortableSlots(server, abort)
    return AbortableServer(server, abort)


class AbortableServer:
    """A `Server` whose blocking calls end at once, with a `ServerError`, when `abort` is set.

    Made by `abortable`, which picks the subclass that keeps the inner server's optional parts.

    Each call runs on its own daemon thread while the caller waits for it or for `abort`,
    whichever comes first. Closing an httpx client from another thread does not wake a read
    that is blocked in the kernel, so abandoning the call is what bounds the wait.
    """

    def __init__(self, server: Server, abort: threading.Event) -> None:
        self.inner, self.abort = server, abort
        self.kind, self.url = server.kind, server.url
        self.flags_source: str | None = server.flags_source if isinstance(server, ReportsFlags) else None

    def _call(self, fn: Callable[[], T]) -> T:
        if self.abort.is_set():
            raise ServerError(ABANDONED)
        outcome: Future[T] = Future()

        def call() -> None:
            try:
                outcome.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                outcome.set_exception(exc)

        threading.Thread(target=call, name="precmon-request", daemon=True).start()
        while True:
            try:
                return outcome.result(timeout=0.05)
            except FutureTimeout:
                if self.abort.is_set():
                    raise ServerError(ABANDONED) from None

    def health(self) -> bool:
        return self._call(self.inner.health)

    def version(self) -> str | None:
        return self._call(self.inner.version)

    def list_models(self) -> list[ModelInfo]:
        return self._call(self.inner.list_models)

    def server_flags(self, model: str | None) -> dict[str, object]:
        inner = self.inner
        return self._call(lambda: inner.server_flags(model)) if isinstance(inner, ReportsFlags) else {}

    def model_info(self, model: str | None) -> ModelInfo | None:
        return self._call(lambda: self.inner.model_info(model))

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        return self._call(lambda: self.inner.tokenize(text, model))

    def stream(self, req: StreamRequest) -> StreamResult:
        return self._call(lambda: self.inner.stream(req))

    def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        """Plain JSON requests (quality scoring, measure/quality/fetch.py) of a server that has them."""
        post = getattr(self.inner, "post_json", None)
        if post is None:
            raise ServerError(f"{self.kind} connection offers no plain JSON requests")
        return self._call(lambda: post(path, payload, timeout_s))

    def is_router(self) -> bool:
        """llama-server in router mode (several models behind one URL), as the inner server says."""
        router = getattr(self.inner, "is_router", None)
        return bool(self._call(router)) if router is not None else False

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        self._call(lambda: self.inner.ensure_loaded(model, timeout_s))

    def close(self) -> None:
        """Close the client; never blocks (a request still in flight holds its own socket)."""
        try:
            self.inner.close()
        except Exception:  # noqa: BLE001 - closing is best effort on the way out
            pass


class _AbortableSlots(AbortableServer):
    """An `AbortableServer` of a server that erases slots (llama-server)."""

    def erase_slot(self, id_slot: int) -> int | None:
        inner = self.inner
        assert isinstance(inner, ErasesSlots)
        return self._call(lambda: inner.erase_slot(id_slot))
