"""`AbortableServer` and `Quitting`: the pieces that let quitting walk away from a stalled server."""

from __future__ import annotations

import threading
import time

import pytest

from precmon.servers.base import ServerError
from precmon.tui.workers.background import ABANDONED, AbortableServer, Quitting


class _Slow:
    kind, url = "fake", "http://127.0.0.1:9"

    def __init__(self) -> None:
        self.release = threading.Event()

    def version(self) -> str:
        self.release.wait(30)  # a read blocked in the kernel, as far as the caller can tell
        return "v1"

    def list_models(self) -> list:
        raise ServerError("HTTP 500 from /v1/models: boom")

    def health(self) -> bool:
        return True

    def close(self) -> None:
        raise OSError("closing is best effort")


def test_abort_ends_a_blocked_call_at_once_with_a_server_error():
    inner, abort = _Slow(), threading.Event()
    server = AbortableServer(inner, abort)
    threading.Timer(0.2, abort.set).start()
    t0 = time.monotonic()
    with pytest.raises(ServerError, match="quitting"):
        server.version()
    assert time.monotonic() - t0 < 1.0
    with pytest.raises(ServerError) as exc:  # once aborted, no new request is sent
        server.health()
    assert str(exc.value) == ABANDONED
    inner.release.set()


def test_values_and_errors_of_the_inner_server_pass_through():
    inner = _Slow()
    server = AbortableServer(inner, threading.Event())
    assert server.health() is True and (server.kind, server.url) == ("fake", "http://127.0.0.1:9")
    inner.release.set()
    assert server.version() == "v1"
    with pytest.raises(ServerError, match="HTTP 500"):
        server.list_models()
    server.close()  # never raises


def test_quitting_join_is_bounded_and_names_the_threads_left():
    quitting = Quitting()
    never = threading.Event()
    quitting.spawn("stuck", lambda: never.wait(30))
    quitting.spawn("polite", lambda: quitting.wait(30))
    quitting.set()
    t0 = time.monotonic()
    assert quitting.join(0.3) == ["precmon-stuck"]
    assert time.monotonic() - t0 < 1.0
    never.set()


class _Llama(_Slow):
    kind = "llamacpp"

    def post_json(self, path: str, payload: dict, timeout_s: float = 30.0) -> object:
        return {"path": path, "n_probs": payload["n_probs"], "timeout_s": timeout_s}

    def is_router(self) -> bool:
        return True

    def tokenize(self, text: str, model: str | None = None) -> list[int]:
        return [1, 2]


def test_quality_requests_pass_through_the_tui_wrapper():
    # quality scoring in a TUI sweep read n/a ("no plain JSON requests") before the wrapper forwarded them
    from precmon.measure.quality.fetch import check_supported

    server = AbortableServer(_Llama(), threading.Event())  # type: ignore[arg-type]
    assert check_supported(server) is server
    assert server.post_json("/completion", {"n_probs": 5}, 3.0) == {
        "path": "/completion",
        "n_probs": 5,
        "timeout_s": 3.0,
    }
    assert server.is_router() is True
    plain = AbortableServer(_Slow(), threading.Event())  # type: ignore[arg-type]
    assert plain.is_router() is False
    with pytest.raises(ServerError, match="no plain JSON requests"):
        plain.post_json("/completion", {})


class _Erasing(_Slow):
    """A server with llama-server's slot erase; it blocks until released, as `version` does."""

    def erase_slot(self, id_slot: int) -> int | None:
        self.release.wait(30)
        return 100 + id_slot


def test_the_wrapper_keeps_a_slot_erase_and_adds_none():
    from precmon.measure.depth.slots import erase_slots
    from precmon.servers.base import ErasesSlots
    from precmon.tui.workers.background import abortable

    inner = _Erasing()
    inner.release.set()
    server, validity = abortable(inner, threading.Event()), {}
    assert isinstance(server, ErasesSlots)
    assert erase_slots(server, True, 2, validity) is None
    assert validity["depth_slots"] == {"erased": True, "steps": 1, "slots": 2, "cells_erased": 201}
    plain = abortable(_Slow(), threading.Event())
    assert not isinstance(plain, ErasesSlots) and erase_slots(plain, True, 2, {}) is None


def test_abort_ends_a_blocked_erase_too():
    from precmon.tui.workers.background import abortable

    inner, abort = _Erasing(), threading.Event()
    server = abortable(inner, abort)
    threading.Timer(0.2, abort.set).start()
    with pytest.raises(ServerError, match="quitting"):
        server.erase_slot(0)  # type: ignore[attr-defined]
    inner.release.set()
