"""Which server the Server panel shows, and what a health check or a look at the usual ports says.

The server shown is the one given with --url, the one discovery found, or, during a sweep
started without --url, the one each variant measures (its own URL, or the one a launched variant
listens on). `ServerFollow` keeps that decision and commands the server worker to match
(`follow`, `unfollow`); the app turns what it returns into its `server_view` reactive
(`precmon.tui.server_view`'s transitions), which the Server panel draws. Plain Python: no textual,
and it never imports the app.

`window` is the one `RateWindow` of the server shown: the Server panel's live figure and watch
mode's big tok/s (`WatchView`) both come from it, and it is emptied when the server shown changes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from precmon.servers import detect
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import RateWindow
from precmon.servers.watch.snapshot import ServerSnapshot
from precmon.sweep.spec import Variant
from precmon.tui import server_view as sv
from precmon.tui.server_view import ServerView
from precmon.tui.workers.server_worker import ServerWorker


@dataclass(frozen=True)
class Found:
    """What a look at the usual local ports found: the first healthy server (None: none), what
    the panel and watch mode's state line say about the search, and the log line."""

    url: str | None
    search: str
    line: str = ""


def discovered(entries: Sequence[Mapping[str, Any]], error: str | None) -> Found:
    """Use the first healthy server found; name the others, and say where we looked if none."""
    healthy = [e for e in entries if e.get("healthy")]
    if not healthy:
        if error:
            return Found(None, f"no server — looking failed: {error}; pass --url")
        ports = ", ".join(str(p) for p in detect.USUAL_PORTS)
        return Found(None, f"no server — none on the usual local ports ({ports}), still looking; pass --url")
    first, url = healthy[0], str(healthy[0]["url"])
    others = [str(e["url"]) for e in healthy[1:]]
    search = "found on a usual port" + (f"; also {', '.join(others)}" if others else "")
    choose = f"also: {', '.join(others)}; pass --url to choose" if others else "pass --url to choose another"
    return Found(url, search, f"found {first.get('kind') or 'a server'} at {url} ({choose})")


class ServerFollow:
    """The sweep-following and health-change side of the Server panel."""

    def __init__(self, worker: ServerWorker, poll_s: float, user_url: bool, poll_server: bool) -> None:
        """`user_url`: the user gave --url (it always wins over a variant's server); `poll_server`:
        the worker watches servers at all (tests turn it off)."""
        self.worker, self.user_url, self.poll_server = worker, user_url, poll_server
        # label → (url, model, kind, API key) of each sweep variant's server
        self.servers: dict[str, tuple[str, str | None, str, str | None]] = {}
        self.followed: str | None = None  # the variant server the panel shows now
        self.launched: set[str] = set()  # labels of the variants whose server the sweep launches
        self.was_healthy: bool | None = None
        self.window = RateWindow(poll_s)  # the live figure of both screens

    def plan(self, variants: Iterable[Variant]) -> None:
        """A sweep's variants: whose server to follow, and which ones the sweep launches."""
        variants = list(variants)
        self.servers = {
            v.label: (v.url, v.model, v.server, os.environ.get(v.api_key_env) if v.api_key_env else None)
            for v in variants
        }
        self.launched = {v.label for v in variants if v.launch}

    def follow(self, label: str) -> str | None:
        """A variant started: without --url, watch the server it measures. The URL the panel
        shows from now on when it is another server (None: the panel stays as it is)."""
        if self.user_url or label not in self.servers:
            return None
        url, model, kind, api_key = self.servers[label]
        moved = url != self.followed
        if moved:
            self.followed = url
            self.window.clear()  # another server: none of the last one's reads
        if self.poll_server:
            self.worker.follow(url, model, kind, api_key)
        return url if moved else None

    def stopped(self, label: str) -> bool:
        """A launched variant finished: the sweep has stopped its server. True when that is the
        server shown: the worker stops asking it (no retries, no connection errors), and the next
        variant's `follow` shows the next server, even one on the same URL."""
        if label not in self.launched or self.followed is None or self.servers[label][0] != self.followed:
            return False
        self.followed, self.was_healthy = None, None  # the next server's first probe is no "is back"
        self.window.clear()
        if self.poll_server:
            self.worker.unfollow()
        return True

    def shows(self, url: str | None) -> bool:
        """A probe of `url` is about the server shown (not the last variant's, probed before the
        worker took the new target)."""
        return not self.followed or url == self.followed

    def health(self, snap: ServerSnapshot) -> str | None:
        """The log line when the server shown went away or came back (None: no change)."""
        was, self.was_healthy = self.was_healthy, snap.healthy
        if was is None or snap.healthy == was:
            return None
        return "server is back" if snap.healthy else f"server went away: {snap.error}"

    def live_rate(self, view: ServerView, rate: LiveRate) -> ServerView:
        """A live read: into the window, and the panel's figure from it (with this read)."""
        now = time.monotonic()
        self.window.add(rate, now)
        return sv.live_rate(view, rate, self.window.rate(now))

    def tick(self, view: ServerView) -> ServerView:
        """At each refresh: a window that went stale since the last read marks the panel's figure
        (the same view when nothing changed)."""
        fig = self.window.rate(time.monotonic())
        shown = view.live_figure
        if fig is not None and fig.stale and not (shown is not None and shown.stale):
            return sv.live_figure(view, fig)
        return view
