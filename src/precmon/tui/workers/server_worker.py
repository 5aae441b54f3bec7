"""The server worker: health and model facts, passive `/metrics`, the live token rate, discovery,
and `--drive`.

The live token rate (`LiveRateRead`, watch mode's big tok/s and the Server panel's sparkline)
comes from the source that moves while a request runs, which `precmon.servers.watch.live_rate.
source_for` picks per kind: llama.cpp's `/slots` (with `/metrics` when on), vLLM's and SGLang's
per-step counters; other kinds say they have none. A health check posts a `ServerSnapshot`
(`precmon.servers.watch.snapshot`: health and model facts) in `ServerProbed`; watch mode's J/token windows
are `watch_energy.JPerTokenWindow`'s.

Everything it needs is in its `ServerConfig` (given by the app, replaced when discovery finds a
server, or retargeted by `follow` to the server a sweep variant measures) and in the `PowerWorker`
it is handed; it reads nothing else off the app. Each loop sleeps
on the shared `Quitting` flag, so quitting never waits out a sleep.

`--drive` keeps a steady load of measured decode requests going. When a request fails (the server
went away, answered 5xx, or something unexpected broke) it says so with `DriveStopped` — the
reason and when it tries again — and retries with a doubling delay, then every
`DRIVE_BACKOFF_MAX_S`, until the app quits: a server that comes back after an hour gets its load
back; it never stops silently.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from precmon.core.phases import DECODE
from precmon.core.schema import Run
from precmon.core.settings import BenchSettings
from precmon.core.stats import decode_energy_per_token
from precmon.measure.prompts import PromptBuilder
from precmon.measure.request import DRIVE_WINDOW, PhaseMeter, measure_request
from precmon.servers.base import ServerError
from precmon.servers.detect import discover_servers, make_server
from precmon.servers.watch import live_rate, metrics
from precmon.servers.watch.snapshot import ServerFacts, read_facts, take_snapshot
from precmon.tui.config import ServerConfig
from precmon.tui.messages import (
    DriveMeasured,
    DriveStopped,
    LiveRateRead,
    MetricsScraped,
    ServerProbed,
    ServersDiscovered,
)
from precmon.tui.pace import SERVER_POLL_MIN_S
from precmon.tui.workers.background import AbortableServer, Post, Quitting, abortable
from precmon.tui.workers.power_worker import PowerWorker
from precmon.tui.workers.watch_energy import JPerTokenWindow

SERVER_POLL_S = SERVER_POLL_MIN_S  # the default poll period (the app passes its pace's)
DISCOVER_EVERY_S = 5.0  # without --url: how often to look on the usual ports until a server answers
HEALTH_EVERY = 4  # ticks between health checks (and between scrapes of a server without /metrics)
DRIVE_BACKOFF_S = 2.0  # --drive: first wait after a failure; doubles per failure in a row
DRIVE_BACKOFF_MAX_S = 30.0  # then every 30 s, until quit: it never gives up


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# A request the stream called complete, with a token count, but no token event: no decode rate.
NO_TOKENS = 'no tokens in the answer (its chunks carried no text, e.g. "choices": [null])'


def drive_delay_s(failures: int) -> float:
    """Seconds to wait after `failures` failed requests in a row: 2, 4, 8, 16, 30, 30, …"""
    return min(DRIVE_BACKOFF_S * 2 ** max(0, failures - 1), DRIVE_BACKOFF_MAX_S)


class ServerWorker:
    """Watches the configured server; with `drive`, also keeps a measured load on it."""

    def __init__(
        self,
        post: Post,
        quitting: Quitting,
        power: PowerWorker,
        config: ServerConfig,
        poll_s: float = SERVER_POLL_S,
        jpt_polls: int = 1,
    ) -> None:
        self.post, self.quitting, self.power, self.config = post, quitting, power, config
        self.poll_s = poll_s  # health, /metrics and the live rate: `Pace.server_poll_s`
        self.metrics_model = config.model  # llama.cpp routers scrape /metrics?model=: the model in use
        self.watching = False  # J/token from /metrics is worked out only while the watch view shows it
        self._scrape_failed = False
        self._jpt = JPerTokenWindow(jpt_polls)  # polls per watch-mode J/token window: `Pace.jpt_polls`
        self._source: live_rate.LiveSource | None = None  # the live rate's source, per kind
        self._probe_now = threading.Event()
        self._lock = threading.Lock()  # guards the three below: `follow` runs on the app's thread
        self._target: ServerConfig | None = None  # where `follow` asked to look next; None: stay
        self._fresh = False  # `unfollow` was asked: the next target starts afresh, even on the same URL
        self._watch_started = False

    # ---- starting -------------------------------------------------------------------------------
    def watch(self) -> None:
        """Health, model facts and /metrics of `config.url`, until the app quits (one loop only)."""
        with self._lock:
            if self._watch_started:
                return
            self._watch_started = True
        self.quitting.spawn("server", self._watch_loop)

    def follow(self, url: str, model: str | None, kind: str = "auto", api_key: str | None = None) -> None:
        """Watch `url` from the next tick on: the server a sweep variant measures (started without
        --url). Watching starts if it was not running; a new URL drops all of the old server's state."""
        with self._lock:
            self._target = replace(self.config, url=url, model=model, kind=kind, api_key=api_key)
        self.watch()

    def unfollow(self) -> None:
        """Stop watching the followed server (the sweep stopped it): no retries, no connection
        errors, until `follow` names the next one."""
        with self._lock:
            self._target = replace(self.config, url=None, model=None)
            self._fresh = True  # a later `follow` of the same URL is a new server process

    def probe_soon(self) -> None:
        """Check health on the next tick, not up to HEALTH_EVERY ticks later: a run just landed on
        the followed server, so a "down" from while it was still starting is stale."""
        self._probe_now.set()

    def drive(self) -> None:
        """A steady load of measured decode requests on `config.url`, until the app quits (the
        power sampler at its full rates meanwhile: each request is a measured window)."""

        def loop() -> None:
            with self.power.full_rate():
                self._drive_loop()

        self.quitting.spawn("drive", loop)

    def discover(self) -> None:
        """Look on the usual local ports until a healthy server answers; posts `ServersDiscovered`."""
        self.quitting.spawn("discover", self._discover_loop)

    # ---- discovery ------------------------------------------------------------------------------
    def _discover_loop(self) -> None:
        """Each look is six local connects, refused at once when nothing listens; a message is posted
        only when what was found changes, so an empty look costs no repaint."""
        last: object = None
        while not self.quitting.is_set:
            try:
                msg = ServersDiscovered(discover_servers(timeout_s=1.0))
            except Exception as exc:  # noqa: BLE001 - shown, and the app keeps working without a server
                msg = ServersDiscovered([], error=one_line(exc))
            key = (tuple(sorted((e.get("url"), bool(e.get("healthy"))) for e in msg.entries)), msg.error)
            if key != last:
                self.post(msg)
                last = key
            if any(e.get("healthy") for e in msg.entries):
                return
            self.quitting.wait(DISCOVER_EVERY_S)

    # ---- health, facts, passive /metrics ----------------------------------------------------------
    def _take_target(self) -> ServerConfig | None:
        """The server `follow` asked for when it is another URL than the one watched, or any after
        `unfollow` (else None)."""
        with self._lock:
            target, self._target = self._target, None
            fresh = self._fresh
            if target is not None:
                self._fresh = False
        if target is None:
            return None
        return target if fresh or target.url != self.config.url else None

    def _watch_loop(self) -> None:
        cfg = self.config
        url = cfg.url
        adapter: Any = None
        poller: metrics.MetricsPoller | None = None
        facts: ServerFacts | None = None
        tick = 0
        while not self.quitting.is_set:
            target = self._take_target()
            if target is not None:  # another server: nothing of the old one may reach the new one's panel
                if poller is not None:
                    poller.close()
                self._close_source()
                adapter, poller, facts, tick = None, None, None, 0
                self.config = cfg = target
                url, self.metrics_model, self._scrape_failed = cfg.url, cfg.model, False
            if not url:  # started by `follow` before its target was taken, or without any URL
                self.quitting.wait(self.poll_s)
                continue
            if tick % HEALTH_EVERY == 0 or self._probe_now.is_set():
                self._probe_now.clear()
                try:
                    if adapter is None:
                        adapter = make_server(url, kind=cfg.kind, api_key=cfg.api_key, timeout_s=5.0)
                    if not adapter.health():
                        raise ServerError(f"{url}: health check failed")
                    if facts is None:
                        facts = read_facts(adapter, self.config.model)
                        self.metrics_model = self.metrics_model or facts.model
                    self.post(ServerProbed(take_snapshot(url, True, facts)))
                except ServerError as exc:
                    adapter, facts = None, None
                    self.post(ServerProbed(take_snapshot(url, False, error=str(exc))))
            # A server without /metrics (or down) is asked again every few seconds, not every second.
            if poller is None or poller.model != self.metrics_model:
                if poller is not None:
                    poller.close()
                poller = metrics.MetricsPoller(url, model=self.metrics_model)
            scraped = not self._scrape_failed or tick % HEALTH_EVERY == 0
            rates, fresh = self._scrape_rates(poller) if scraped else (None, False)
            # The live rate is read every tick: llama.cpp's /slots works without /metrics.
            live = self._live(facts, poller, fresh, tick)
            closed, jpt = self._watch_j_per_token(rates, live)
            if live is not None:
                self.post(LiveRateRead(live, jpt, closed))
            if fresh:
                self.post(MetricsScraped(rates, None))
            tick += 1
            self.quitting.wait(self.poll_s)
        if poller is not None:
            poller.close()
        self._close_source()

    def _scrape_rates(self, poller: metrics.MetricsPoller) -> tuple[metrics.LiveRates | None, bool]:
        """One /metrics scrape: (rates since the last, whether this scrape worked); a failure is posted."""
        try:
            rates = poller.poll()
        except ServerError as exc:
            self._scrape_failed = True
            self.post(MetricsScraped(None, str(exc)))
            return None, False
        self._scrape_failed = False
        return rates, True

    def _live(
        self, facts: ServerFacts | None, poller: metrics.MetricsPoller, fresh: bool, tick: int
    ) -> live_rate.LiveRate | None:
        """The live token rate from the kind's source (None: not known yet, or the first read)."""
        kind = live_rate.live_kind(facts.kind if facts is not None else None, poller.kind)
        if kind is None:
            return None
        source = self._source
        if source is None or (source.kind, source.model) != (kind, self.metrics_model):
            self._close_source()
            url, key = self.config.url or "", self.config.api_key
            source = self._source = live_rate.source_for(kind, url, self.metrics_model, key, retry_every=HEALTH_EVERY)
        return source.read(poller, fresh, tick)

    def _close_source(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    def _watch_j_per_token(
        self, rates: metrics.LiveRates | None, live: live_rate.LiveRate | None
    ) -> tuple[bool, float | None]:
        """(whether a J/token window closed with this poll, its J/token or None) while the watch
        view shows it: one energy window every `jpt_polls` polls, its tokens summed over them."""
        return self._jpt.step(self.power.measuring_meter() if self.watching else None, rates, live)

    # ---- --drive ------------------------------------------------------------------------------------
    def _drive_loop(self) -> None:
        cfg = self.config
        failures = 0
        since: float | None = None  # time.time() of the first failure in a row
        while not self.quitting.is_set and cfg.url:
            server: AbortableServer | None = None
            try:
                s = cfg.settings
                server = abortable(
                    make_server(cfg.url, kind=cfg.kind, api_key=cfg.api_key, timeout_s=s.timeout_s),
                    self.quitting.event,
                )
                server.ensure_loaded(cfg.model, timeout_s=max(s.timeout_s, 300.0))
                builder = PromptBuilder(None)
                while not self.quitting.is_set:
                    run = self._drive_once(server, builder, s)
                    if not run.ok:
                        raise ServerError(f"request not valid: {run.reason or 'no reason given'}")
                    if run.decode_tok_s is None:  # "valid", yet no token came: `"choices": [null]` does that
                        raise ServerError(NO_TOKENS)
                    failures, since = 0, None
            except Exception as exc:  # noqa: BLE001 - any failure is shown, then retried after a wait
                if self.quitting.is_set:
                    return
                failures += 1
                since = since if since is not None else time.time()
                delay = drive_delay_s(failures)
                self.post(DriveStopped(one_line(exc), failures, delay, since))
                self.quitting.wait(delay)
            finally:
                if server is not None:
                    server.close()

    def _drive_once(self, server: AbortableServer, builder: PromptBuilder, s: BenchSettings) -> Run:
        meter = self.power.measuring_meter()
        prompt = builder.build(s.decode_prompt_tokens)
        power = PhaseMeter(meter)
        run, res, measured = measure_request(
            server, power, DECODE, prompt, s.output_tokens, self.config.model, s.timeout_s, key=DRIVE_WINDOW
        )
        if res.prompt_tokens:
            builder.calibrate(len(prompt.text.split()) - 1, res.prompt_tokens)
        watts = jpt = None
        if measured is not None and meter is not None and measured.headline is not None and run.ok:
            measured.apply(run, meter, res, extras=False)  # the same decode window as a bench: first token → end
            watts = run.power_w
            jpt = decode_energy_per_token(run)
        self.post(DriveMeasured(run, watts, jpt))
        return run
