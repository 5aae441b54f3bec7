"""One orchestration (issue 27): a sequential and an interleaved sweep measure each variant through
the same parts (`execute.VariantRun`), so they record the same things; a stop is told from the
variant's typed outcome, never from the words of an error; a cut says it in core/stops.py's words
whichever way it came. Against `TimedServer` (loopback, a llama.cpp-like fake)."""

from __future__ import annotations

import json
from typing import Any

import precmon.sweep.execute as execute
from precmon.core import stops
from precmon.core.stops import INTERRUPTED, Cut, Stop
from precmon.measure.bench import Bench
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from precmon.sweep.execute import Context, Job, run_variant
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.sweep.test_execute import SETTINGS
from tests.sweep.test_interleave import spec_text

#: Keys whose presence depends on the numbers measured, not on the orchestration: a warning
#: appears when a run was noisy or the host busy, in either order.
BY_VALUE = {"warnings"}


def key_paths(value: Any, prefix: str = "", depth: int = 3) -> set[str]:
    """Every key path of a JSON value, list elements merged as `[]` (`runs[].extra.order_index`)."""
    if depth == 0:
        return set()
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k in BY_VALUE and not prefix:
                continue
            path = f"{prefix}.{k}" if prefix else k
            out |= {path} | key_paths(v, path, depth - 1)
    elif isinstance(value, list):
        for v in value:
            out |= key_paths(v, f"{prefix}[]", depth)
    return out


def test_a_sequential_and_an_interleaved_variant_record_the_same_keys(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        seq = json.loads(SweepRunner(parse_spec(spec_text(srv.url, order="")), tmp_path / "s").run().read_text())
        inter = json.loads(SweepRunner(parse_spec(spec_text(srv.url)), tmp_path / "i").run().read_text())
    assert [v["status"] for v in seq["variants"]] == [v["status"] for v in inter["variants"]] == ["ok"] * 3
    for s, i in zip(seq["variants"], inter["variants"], strict=True):
        assert s["label"] == i["label"]
        # the one key only an interleaved run has: its place in the session's order (§6)
        assert key_paths(i) - key_paths(s) == {"runs[].extra.order_index"}
        assert key_paths(s) - key_paths(i) == set(), s["label"]
        assert "compute_path" in s and i["compute_path"] == s["compute_path"]


def test_a_server_error_that_says_stopped_does_not_stop_the_sweep(tmp_path, monkeypatch):
    """The runner read "stopped by user" in any error as the user's stop, and ended the sweep."""
    from precmon.servers.protocols.openai import OpenAIServer

    real = OpenAIServer.stream

    def says_stopped(self, req):
        if req.model == "A":
            raise ServerError("HTTP 503: generation stopped by user request (upstream)")
        return real(self, req)

    monkeypatch.setattr(OpenAIServer, "stream", says_stopped)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        runner = SweepRunner(parse_spec(spec_text(srv.url, order="")), tmp_path)
        doc = json.loads(runner.run().read_text())
    assert not runner.interrupted
    assert [(v["label"], v["status"]) for v in doc["variants"]] == [("A", "failed"), ("B", "ok"), ("C", "ok")]


class _SignalAfterTwoRuns(Bench):
    """SIGTERM reaching the TUI after two runs: its handler asks the stop event for an interrupt
    (tui_cmd: `app.shutdown(Cut.INTERRUPTED)`); no KeyboardInterrupt in the measuring thread."""

    def _record(self, run):
        super()._record(run)
        if len(self.result.runs) == 2:
            stops.request(self.stop, Cut.INTERRUPTED)


def test_an_interrupt_asked_of_the_stop_event_is_recorded_as_one(monkeypatch):
    monkeypatch.setattr(execute, "Bench", _SignalAfterTwoRuns)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        job = Job(SETTINGS, lambda: make_server(srv.url, kind="llamacpp", timeout_s=20), srv.url, "llamacpp")
        outcome = run_variant(job, Context(stop=Stop()))
    assert outcome.cut is Cut.INTERRUPTED and outcome.interrupted
    assert outcome.result.errors.count(INTERRUPTED) == 1 and len(outcome.result.runs) == 2
    assert outcome.result.status == "partial"


def test_the_user_stop_is_a_stop_not_an_interrupt(monkeypatch):
    class _StopAfterTwoRuns(Bench):
        def _record(self, run):
            super()._record(run)
            if len(self.result.runs) == 2:
                self.stop.set()  # the TUI's `s` again

    monkeypatch.setattr(execute, "Bench", _StopAfterTwoRuns)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        job = Job(SETTINGS, lambda: make_server(srv.url, kind="llamacpp", timeout_s=20), srv.url, "llamacpp")
        outcome = run_variant(job, Context(stop=Stop()))
    assert outcome.cut is Cut.STOPPED and not outcome.interrupted
    assert [e for e in outcome.result.errors if e in stops.PLAN_WORDS.values()] == [stops.PLAN_WORDS[Cut.STOPPED]]


def test_ctrl_c_before_the_server_answers_is_recorded_not_raised():
    def connect():
        raise KeyboardInterrupt

    job = Job(SETTINGS, connect, "http://127.0.0.1:9", "llamacpp", label="A")
    outcome = run_variant(job, Context())
    assert not outcome.reached and outcome.interrupted
    assert outcome.result.status == "failed" and outcome.result.errors == [INTERRUPTED]
