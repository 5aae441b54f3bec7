"""`--timeout` is a total deadline per request and per probe, not per read (issue 11 #5)."""

from __future__ import annotations

import time

import pytest

from precmon.measure.timing import validate
from precmon.servers.base import ServerError, StreamRequest
from precmon.servers.detect import detect_kind, make_server
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.watch.metrics import MetricsPoller, scrape
from tests.fakes.wire_servers import Scripted, ScriptedServer, sse

TOK = {"choices": [{"text": " tok", "finish_reason": None}]}
SLACK_S = 1.0  # a loaded 2-core machine


def timed(fn):
    t0 = time.monotonic()
    try:
        out = fn()
    except ServerError as exc:
        out = exc
    return out, time.monotonic() - t0


def test_a_trickling_stream_ends_at_the_deadline():
    # One byte every 0.1 s: each read is quick, so a per-read timeout never fires.
    body = b"".join(sse(*[TOK] * 50))
    routes = {"POST /v1/completions": Scripted(chunks=[body[i : i + 1] for i in range(len(body))], gap_s=0.1)}
    with ScriptedServer(routes) as srv:
        s = OpenAIServer(srv.url)
        res, took = timed(lambda: s.stream(StreamRequest(prompt="a", max_tokens=50, timeout_s=1.0)))
        s.close()
    assert 1.0 <= took < 1.0 + SLACK_S
    assert "no complete answer within 1 s" in res.error and "total deadline" in validate(res, 50)


def test_a_stream_that_stalls_near_the_deadline_ends_at_the_deadline():
    # Tokens for 0.8 s, then nothing: a per-read timeout would wait a whole timeout more; the
    # watchdog cuts the blocked read at the deadline.
    tok = b'{"response": "x", "done": false}\n'
    routes = {"POST /api/generate": Scripted(chunks=[tok] * 5 + [b""], gaps_s=(0.2, 0.2, 0.2, 0.2, 30))}
    with ScriptedServer(routes) as srv:
        s = OllamaServer(srv.url)
        res, took = timed(lambda: s.stream(StreamRequest(prompt="a", max_tokens=5, model="m", timeout_s=1.2)))
        s.close()
    assert 1.2 <= took < 1.7
    assert "total deadline" in res.error and res.text == "xxxxx"


def test_a_server_that_never_answers_costs_one_timeout_not_one_per_probe():
    routes = {path: Scripted(stall_s=60) for path in ("/props", "/get_server_info", "/api/version", "/v1/models")}
    with ScriptedServer(routes) as srv:
        exc, took = timed(lambda: detect_kind(srv.url, timeout_s=2.0))
        assert isinstance(exc, ServerError) and "no answer within 2 s" in str(exc)
        assert took < 2.0 + SLACK_S
        exc, took = timed(lambda: make_server(srv.url, timeout_s=1.0))
        assert isinstance(exc, ServerError) and took < 1.0 + SLACK_S


def test_a_plain_request_trickling_its_body_ends_at_the_deadline():
    body = b'{"data": [' + b" " * 40 + b"]}"
    routes = {"GET /v1/models": Scripted(chunks=[body[i : i + 1] for i in range(len(body))], gap_s=0.1)}
    with ScriptedServer(routes) as srv:
        s = OpenAIServer(srv.url, timeout_s=1.0)
        exc, took = timed(s.list_models)
        s.close()
    assert isinstance(exc, ServerError) and "total deadline" in str(exc)
    assert took < 1.0 + SLACK_S


@pytest.mark.parametrize("timeout_s", [0.5])
def test_a_stalled_answer_before_the_headers_is_a_server_error(timeout_s):
    with ScriptedServer({"POST /v1/completions": Scripted(stall_s=30)}) as srv:
        s = OpenAIServer(srv.url)
        exc, took = timed(lambda: s.stream(StreamRequest(prompt="a", max_tokens=1, timeout_s=timeout_s)))
        s.close()
    assert isinstance(exc, ServerError) and "no answer within" in str(exc) and took < timeout_s + SLACK_S


def test_a_metrics_scrape_is_bounded_and_its_errors_redacted():
    body = b"vllm:num_requests_running 0\n" * 20
    routes = {"GET /metrics": Scripted(chunks=[body[i : i + 4] for i in range(0, len(body), 4)], gap_s=0.1)}
    with ScriptedServer(routes) as srv:
        url = srv.url.replace("http://", "http://u:pw-secret@")
        exc, took = timed(lambda: scrape(url, timeout_s=0.5))
        poller = MetricsPoller(url, timeout_s=0.5)
        exc2, _ = timed(poller.poll)
        poller.close()
    assert isinstance(exc, ServerError) and "total deadline" in str(exc) and took < 0.5 + SLACK_S
    assert isinstance(exc2, ServerError) and "pw-secret" not in str(exc) + str(exc2)
