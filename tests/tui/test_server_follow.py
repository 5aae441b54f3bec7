"""Which server the Server panel shows, without a screen: discovery's pick, the sweep-following
and health changes (`precmon.tui.server_follow`), and what a bench's or sweep's events change
(`precmon.tui.measure_flow`)."""

from __future__ import annotations

from pathlib import Path

from precmon.core.schema import Run, VariantResult
from precmon.servers.watch.snapshot import ServerSnapshot
from precmon.sweep.events import RunLanded, VariantFinished, VariantStarted
from precmon.sweep.spec import SweepSpec, Variant
from precmon.tui.live import RUNNING, LiveResults
from precmon.tui.measure_flow import MeasureFlow
from precmon.tui.run_trace import RunTrace
from precmon.tui.server_follow import ServerFollow, discovered
from precmon.tui.server_view import ServerView


class Worker:
    """The server worker's commands, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.metrics_model: str | None = None

    def follow(self, url: str, model: str | None, kind: str = "auto", api_key: str | None = None) -> None:
        self.calls.append(("follow", url))

    def unfollow(self) -> None:
        self.calls.append(("unfollow",))

    def probe_soon(self) -> None:
        self.calls.append(("probe_soon",))


A, B = "http://127.0.0.1:18200", "http://127.0.0.1:18201"
VARIANTS = [
    Variant("F16", "fp16", A, model="tiny-F16", launch=["llama-server", "--port", "18200"]),
    Variant("Q8_0", "int8", A, model="tiny-Q8_0", launch=["llama-server", "--port", "18200"]),
    Variant("Q4", "int4", B, model="tiny-Q4"),
]


def _follow(user_url: bool = False) -> tuple[ServerFollow, Worker]:
    worker = Worker()
    follow = ServerFollow(worker, 1.0, user_url=user_url, poll_server=True)  # type: ignore[arg-type]
    follow.plan(VARIANTS)
    return follow, worker


def test_discovery_picks_the_first_healthy_server_and_names_the_others():
    found = discovered(
        [{"url": A, "healthy": False}, {"url": B, "healthy": True, "kind": "vllm"}, {"url": A + "1", "healthy": True}],
        None,
    )
    assert (found.url, found.search) == (B, f"found on a usual port; also {A}1")
    assert found.line == f"found vllm at {B} (also: {A}1; pass --url to choose)"
    none = discovered([{"url": A, "healthy": False}], None)
    assert none.url is None and "none on the usual local ports" in none.search and "still looking" in none.search
    assert discovered([], "boom").search == "no server — looking failed: boom; pass --url"


def test_a_sweep_is_followed_server_by_server_and_a_stopped_server_is_let_go():
    follow, worker = _follow()
    assert follow.follow("F16") == A and worker.calls == [("follow", A)]
    assert follow.follow("Q8_0") is None  # the same server: the panel stays, the worker is told again
    assert not follow.stopped("Q4") and follow.shows(A) and not follow.shows(B)
    assert follow.stopped("Q8_0") and worker.calls[-1] == ("unfollow",) and follow.followed is None
    assert follow.follow("F16") == A  # the same URL after a stop: a new server process, shown afresh
    assert follow.follow("Q4") == B


def test_a_url_given_by_the_user_always_wins():
    follow, worker = _follow(user_url=True)
    assert follow.follow("F16") is None and worker.calls == []


def test_health_changes_are_said_once_each():
    follow, _ = _follow()
    up, down = ServerSnapshot(A, True), ServerSnapshot(A, False, error="refused")
    assert [follow.health(s) for s in (up, up, down, down, up)] == [
        None,
        None,
        "server went away: refused",
        None,
        "server is back",
    ]


def test_a_sweeps_events_fill_the_results_and_move_the_server_shown():
    follow, worker = _follow()
    live = LiveResults()
    flow = MeasureFlow(live, follow, RunTrace(), worker)  # type: ignore[arg-type]
    flow.planned(SweepSpec(None, VARIANTS), {"hostname": "h"})
    assert [v.status for v in live.doc.variants] == ["pending"] * 3
    view, changed = flow.event(VariantStarted("F16", 0, 3, "launch"), ServerView())
    assert changed and (view.url, view.model, view.precision) == (A, "tiny-F16", "fp16")
    assert worker.metrics_model == "tiny-F16" and live.doc.variants[0].status == RUNNING
    down = ServerView(url=A, healthy=False)
    view, changed = flow.event(RunLanded("F16", Run("decode", 16, 16, ttft_s=0.05, decode_tok_s=300.0)), down)
    assert changed and view.last_tok_s == 300.0 and worker.calls[-1] == ("probe_soon",)
    result = VariantResult("F16", "fp16", "tiny-F16", {}, metrics={"decode_tok_s": 301.0})
    view, changed = flow.event(VariantFinished(result, Path("r.json")), view)
    assert changed and view.stopped == "stopped by the sweep (launched variant F16)"
    assert flow.ended(None) and [v.label for v in live.doc.variants] == ["F16"]  # the pending ones go
