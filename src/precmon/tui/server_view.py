"""What the Server panel shows, as one frozen value, and how each event changes it.

The app holds no panel state of its own: it hands each event to a function here, which returns
the next `ServerView`, and assigns it to the panel's one reactive (`ServerPanel.view`). Pure
functions, no Textual: the transitions are tested without a screen.

Once the sweep has stopped the server shown, nothing read from it afterwards is news (the worker's
last tick only finds it gone): probes, scrapes and live reads leave the view as it is until
`follow` shows the next one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from precmon.core.schema import Run
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.metrics import LiveRates
from precmon.servers.watch.rate_window import WindowRate
from precmon.servers.watch.snapshot import ServerSnapshot

SPARK_POINTS = 32


@dataclass(frozen=True)
class ServerView:
    url: str | None = None
    kind: str | None = None
    version: str | None = None
    model: str | None = None
    precision: str | None = None
    healthy: bool | None = None  # None: not probed yet
    error: str | None = None
    last_tok_s: float | None = None
    last_ttft_s: float | None = None
    last_phase: str | None = None
    tok_s_series: tuple[float, ...] = ()
    ttft_series: tuple[float, ...] = ()
    rates: LiveRates | None = None  # the passive /metrics rates
    metrics_error: str | None = None
    live: LiveRate | None = None  # the last one-second read, or why there is none
    # The figure shown: the live reads of the last few seconds (`RateWindow`, the one watch mode
    # shows too), with why it is unsure; never the raw one-second read (3.95 read for 28.3 under load).
    live_figure: WindowRate | None = None
    live_series: tuple[float, ...] = ()
    search: str | None = None  # without --url: "looking…" or what the look on the usual ports found
    stopped: str | None = None  # why the server is gone on purpose: "stopped by the sweep (launched variant X)"
    measured: str | None = None  # the model a bench or sweep measured here last (`measuring`)
    failing: str | None = None  # `--drive`'s requests fail: "3 failed requests since 18:02:11 — why"


def _more(series: tuple[float, ...], value: float) -> tuple[float, ...]:
    return (*series, value)[-SPARK_POINTS:]


def probed(v: ServerView, healthy: bool, **facts: Any) -> ServerView:
    """A health check: health, and the facts it read (None leaves a fact as it was, but `error`)."""
    if v.stopped:
        return v
    keep = {k: val for k, val in facts.items() if val is not None or k == "error"}
    return replace(v, healthy=healthy, **keep)


def server(v: ServerView, snap: ServerSnapshot) -> ServerView:
    """A health check's snapshot: health, kind, version, model and precision, or why it is down.

    A router still serving the model measured last keeps it on the panel: the probe reads the
    model the worker was started with (the router's first, or the first variant's), and after a
    router sweep the panel named "tiny-F16" instead of the last model measured."""
    model, precision = snap.model, snap.quantization
    if v.measured and model != v.measured and v.measured in snap.models:
        model = precision = None  # None: left as `measuring` set them
    return probed(
        v,
        bool(snap.healthy),
        kind=snap.kind,
        version=snap.version,
        model=model,
        precision=precision,
        error=snap.error,
    )


def measuring(v: ServerView, model: str | None, precision: str | None) -> ServerView:
    """A sweep variant started on this server: its model and precision, health left as probed
    (a launched server may not be up yet)."""
    return replace(v, model=model or v.model, precision=precision or v.precision, measured=model or v.measured)


def stopped_by_sweep(v: ServerView, note: str) -> ServerView:
    """The sweep stopped the server it launched: say so, instead of its connection errors."""
    return replace(v, stopped=note, healthy=None, error=None, live=None, live_figure=None, metrics_error=None)


def searching(v: ServerView, note: str) -> ServerView:
    return replace(v, search=note)


def found(v: ServerView, url: str, note: str) -> ServerView:
    """Discovery found a server: from now on the panel shows it like one passed with --url."""
    return replace(v, url=url, search=note)


def follow(url: str, note: str) -> ServerView:
    """A sweep variant's own server (no --url): shown afresh, nothing of the last one kept."""
    return ServerView(url=url, search=note)


def request_measured(v: ServerView, run: Run) -> ServerView:
    """A measured request landed: decode tok/s from decode-like runs, TTFT from every run."""
    tok = run.decode_tok_s if run.ok else None
    ttft = run.ttft_s if run.ok else None
    return replace(
        v,
        failing=None if tok is not None else v.failing,  # a request with tokens: not failing any more
        last_tok_s=tok if tok is not None else v.last_tok_s,
        last_ttft_s=ttft if run.ok else v.last_ttft_s,
        last_phase=run.phase,
        tok_s_series=_more(v.tok_s_series, tok) if tok is not None else v.tok_s_series,
        ttft_series=_more(v.ttft_series, ttft) if ttft is not None else v.ttft_series,
    )


def drive_failing(v: ServerView, note: str) -> ServerView:
    """`--drive`'s requests fail (count, since when, why): the decode row says so, not the last good figure."""
    return replace(v, failing=note)


def metrics(v: ServerView, rates: LiveRates | None, error: str | None) -> ServerView:
    if v.stopped:
        return v
    return replace(v, rates=rates if rates is not None else v.rates, metrics_error=error)


def live_rate(v: ServerView, rate: LiveRate, figure: WindowRate | None) -> ServerView:
    """A live token rate was read (`LiveRate`): the live row's figure (`figure`, its window's, with
    the read in it) and the sparkline of the one-second reads."""
    if v.stopped:
        return v
    series = _more(v.live_series, rate.tok_s) if rate.tok_s is not None else v.live_series
    return replace(v, live=rate, live_figure=figure, live_series=series)


def live_figure(v: ServerView, figure: WindowRate | None) -> ServerView:
    """The window's figure changed without a read (it went stale: no read for a while)."""
    return v if v.stopped else replace(v, live_figure=figure)
