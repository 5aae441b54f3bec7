"""Which server the Server panel shows, and what each health check and discovery changes there.

The app's message handlers hand server events here; this keeps the state they need (the server
followed during a sweep, its last health, the live reads' window) and computes the panel's next
`ServerView` (`precmon.tui.server_view`). Split from `app.py` so the app is the glue and nothing else.

`window` is the one `RateWindow` of the server shown: the Server panel's live figure and watch
mode's big tok/s both come from it (`watch_routes.py` reads it at each repaint).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from precmon.servers import detect
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import RateWindow
from precmon.tui import server_view as sv
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.untrusted import redact_url, visible

if TYPE_CHECKING:
    from precmon.tui.app import PrecmonApp
    from precmon.tui.workers.server_worker import ServerWorker


class ServerRoutes:
    """The Server panel's side of the app: discovery, sweep-following, health changes."""

    def __init__(self, app: PrecmonApp, user_url: bool) -> None:
        self.app = app
        # label → (url, model, kind, API key) of each sweep variant's server: without --url the
        # Server panel follows the one being measured (`follow`)
        self.servers: dict[str, tuple[str, str | None, str, str | None]] = {}
        self.followed: str | None = None  # the variant server the panel shows now
        self.launched: set[str] = set()  # labels of the variants whose server the sweep launches
        self.user_url = user_url  # discovery also sets config.url; only the user's --url wins
        self.was_healthy: bool | None = None
        self.window = RateWindow(app.pace.server_poll_s)  # the live figure of both screens
        self._panel: ServerPanel | None = None

    @property
    def panel(self) -> ServerPanel:
        """The main screen's panel, held from its first use (the app's mount): a refresh tick can
        land while the screen is being torn down on exit."""
        if self._panel is None:
            self._panel = self.app.base(ServerPanel)
        return self._panel

    def change(self, step: Any, *args: Any, **kwargs: Any) -> None:
        """The panel's next view: `step(view, …)` of `precmon.tui.server_view`."""
        panel = self.panel
        panel.view = step(panel.view, *args, **kwargs)

    def live_rate(self, rate: LiveRate) -> None:
        """A live read: into the window, and the panel's figure from it (with this read)."""
        now = time.monotonic()
        self.window.add(rate, now)
        self.change(sv.live_rate, rate, self.window.rate(now))

    def tick(self) -> None:
        """At each refresh: a window that went stale since the last read marks the panel's figure."""
        fig = self.window.rate(time.monotonic())
        shown = self.panel.view.live_figure
        if fig is not None and fig.stale and not (shown is not None and shown.stale):
            self.change(sv.live_figure, fig)

    def plan(self, variants: Any) -> None:
        """A sweep's variants: whose server to follow, and which ones the sweep launches."""
        self.servers = {
            v.label: (v.url, v.model, v.server, os.environ.get(v.api_key_env) if v.api_key_env else None)
            for v in variants
        }
        self.launched = {v.label for v in variants if v.launch}

    def probed(self, msg: ServerWorker.Probed) -> None:
        snap = msg.snapshot
        if self.followed and snap.url != self.followed:
            return  # the last variant's server, probed before the worker took the new target
        if self.panel.view.stopped:
            return  # the server the sweep stopped, probed on the worker's last tick: not "went away"
        self.change(sv.server, snap)
        if self.was_healthy is not None and snap.healthy != self.was_healthy:
            self.app.base(ProgressLog).log_line(
                "server is back" if snap.healthy else f"server went away: {snap.error}", error=not snap.healthy
            )
        self.was_healthy = snap.healthy

    def discovered(self, msg: ServerWorker.Discovered) -> None:
        """Use the first healthy server found; name the others, and say where we looked if none."""
        app = self.app
        if app.url or self.followed:
            return
        healthy = [e for e in msg.entries if e.get("healthy")]
        if not healthy:
            ports = ", ".join(str(p) for p in detect.USUAL_PORTS)
            app.search = f"no server — none on the usual local ports ({ports}), still looking; pass --url"
            if msg.error:
                app.search = f"no server — looking failed: {msg.error}; pass --url"
            self.change(sv.searching, app.search)
            app.sub_title = "no server"
            return
        first = healthy[0]
        url = str(first["url"])
        app.config = replace(app.config, url=url)
        app.server_worker.config = app.config
        others = [str(e["url"]) for e in healthy[1:]]
        app.search = "found on a usual port" + (f"; also {', '.join(others)}" if others else "")
        self.change(sv.found, url, app.search)
        app.sub_title = visible(redact_url(url))
        choose = f"also: {', '.join(others)}; pass --url to choose" if others else "pass --url to choose another"
        app.base(ProgressLog).log_line(f"found {first.get('kind') or 'a server'} at {url} ({choose})")
        app.start_server_workers()

    def follow(self, label: str) -> None:
        """Without --url, the Server panel shows the server the sweep measures now (one it launched,
        or the variant's own URL); a --url given by the user always wins."""
        if self.user_url or label not in self.servers:
            return
        url, model, kind, api_key = self.servers[label]
        if url != self.followed:
            self.followed = url
            self.window.clear()  # another server: none of the last one's reads
            self.panel.view = sv.follow(url, f"sweep: {label}")
            self.app.sub_title = visible(redact_url(url))
        if self.app.poll_server:
            self.app.server_worker.follow(url, model, kind, api_key)

    def stopped_by_sweep(self, label: str) -> None:
        """A launched variant finished: the sweep has stopped its server. The panel following it
        says so (not "healthy", not its connection errors) and the worker stops asking it; the
        next variant's `follow` shows the next server, even one on the same URL."""
        if label not in self.launched or self.followed is None or self.servers[label][0] != self.followed:
            return
        self.followed, self.was_healthy = None, None  # the next server's first probe is no "is back"
        self.window.clear()
        self.change(sv.stopped_by_sweep, f"stopped by the sweep (launched variant {label})")
        if self.app.poll_server:
            self.app.server_worker.unfollow()
