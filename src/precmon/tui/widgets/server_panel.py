"""The Server panel: what is serving (kind, model, precision, health), the last measured
request (tok/s and TTFT, with sparklines of the recent ones) and the live row: generated tok/s
right now across all clients (with a sparkline) and the passive `/metrics` rates.

Every number shown is a measured `Run` (from a bench, a sweep or `--drive`), the live reads'
window (`precmon.servers.watch.rate_window`, the figure watch mode shows: marked ⚠ with a short
reason when unsure) or a `LiveRates` from `precmon.servers.watch.metrics`; what the server is
(health, kind, version, model, precision) comes from the health check's `ServerSnapshot`. They
reach this widget as one value, a `ServerView` (`precmon.tui.server_view` makes each new one
from the last); the widget only draws it.

Error texts are one line each here (`panel_error`, `one_line`): the first line, without URL query
strings, cut with "…" at the panel's width; a server the sweep stopped on purpose says so in its
own words (`server_view.stopped_by_sweep`) instead of being probed into connection errors.
"""

from __future__ import annotations

import re

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from precmon.report.fmt import format_value
from precmon.report.sparkline import sparkline
from precmon.tui.server_view import ServerView
from precmon.untrusted import redact, redact_url, visible


class ServerPanel(Static):
    """Draws a `ServerView`: the app's `server_view`, bound (`view`); the app computes each new one
    with `precmon.tui.server_view`.

    `hidden` (bound to the app's `watching`): watch mode hides the panel, and a hidden panel is
    not drawn (watch mode stays cheap); it is drawn as it is now when shown again. `compact`
    (bound to the app's `narrow`): 80×24, four lines instead of six."""

    BORDER_TITLE = "Server"
    view: reactive[ServerView] = reactive(ServerView, always_update=True, repaint=False)  # watch_view draws
    hidden: reactive[bool] = reactive(False)
    compact: reactive[bool] = reactive(False)

    _stale = False  # a view came while hidden

    # rendering --------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.update(render_server(self.view, self.compact))

    def watch_view(self, view: ServerView) -> None:
        if self.hidden:
            self._stale = True
            return
        self.update(render_server(view, self.compact))

    def watch_hidden(self, hidden: bool) -> None:
        if not hidden and self._stale:
            self._stale = False
            self.update(render_server(self.view, self.compact))

    def watch_compact(self, compact: bool) -> None:
        self.update(render_server(self.view, compact))


def _health(v: ServerView) -> Text:
    if v.stopped:
        return Text("■ stopped", style="bold yellow")
    if v.healthy is None:
        return Text("probing…", style="dim")
    if v.healthy:
        return Text("● healthy", style="bold green")
    return Text(f"✗ unreachable — {panel_error(v.error or 'no answer')}", style="bold red")


def _live_text(v: ServerView, compact: bool) -> Text | None:
    """The live tok/s (the window's figure, ⚠ and why in a few words when unsure) with the
    sparkline of the one-second reads, or why there is none (None: nothing read yet)."""
    lr, fig = v.live, v.live_figure
    if lr is None:
        return None
    if lr.tok_s is None or fig is None or fig.tok_s is None:
        if lr.unavailable:
            return Text(visible(redact(lr.unavailable)), style="dim")
        return one_line(f"n/a — {panel_error(lr.error or 'no reading')}", style="dim")
    text = Text(f"{format_value(fig.tok_s)} tok/s", style="bold")
    if fig.unsure:  # the window says why the figure may be off: never a silent number
        text.append(f" ⚠ {fig.brief or 'unsure'}", style="bold yellow")
    text.append(" ")
    text.append(sparkline(v.live_series, 8 if compact else 12), style="green")
    if lr.generating is not None:
        text.append(f" · {lr.generating} generating")
    return text


def _metrics_line(v: ServerView, compact: bool = False) -> RenderableType:
    if v.stopped:
        return Text(visible(v.stopped), style="bold yellow")
    if v.healthy is False:  # the health row says why, once; the old rates and scrape errors are stale
        return Text("n/a — the server is unreachable (above)", style="dim")
    r = v.rates
    live = _live_text(v, compact)
    if r is None:
        if live is not None:
            return live
        why = panel_error(_short(v.metrics_error)) if v.metrics_error else "waiting for two scrapes"
        return one_line(f"n/a — {why}", style="dim")
    parts: list[str] = []
    if live is None:  # no live source known yet: the /metrics counter (it may move only at a request's end)
        parts.append(f"{format_value(r.generation_tok_s)} tok/s generated")
    if r.requests_running is not None and (v.live is None or v.live.generating is None):
        parts.append(f"{r.requests_running:.0f} running")
    ttft = r.ttft_p50_s if r.ttft_p50_s is not None else r.ttft_mean_s
    if ttft is not None:
        parts.append(f"TTFT p50 {format_value(ttft)} s")
    if r.kv_cache_usage_ratio is not None:
        parts.append(f"KV {r.kv_cache_usage_ratio * 100:.0f}%")
    text = Text()
    lines: list[Text] = []
    if live is not None:
        if live.no_wrap:  # an error: its own line, the numbers on the next
            lines.append(live)
        else:
            text.append_text(live)
            if parts:
                text.append(" · ")
    text.append(" · ".join(parts))
    text.no_wrap, text.overflow = True, "ellipsis"  # one row, cut with "…": folded it pushed the rows below
    if text:
        lines.append(text)
    if v.metrics_error:
        lines.append(one_line(f"last scrape failed: {panel_error(_short(v.metrics_error))}", style="red"))
    return lines[0] if len(lines) == 1 else Group(*lines)


# A URL's query string (llama.cpp router mode: `?model=%2Fpath%2Fto%2Fmodel.gguf&autoload=false`),
# up to the space (or the ":", ",", ";", "." or ")" before it) that ends the URL in an error message.
_QUERY = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)[?#]\S*?(?=[:,;.)]?(?:\s|$))")


def panel_error(error: str) -> str:
    """An error as the panel shows it: its first line, credentials redacted, control characters
    made visible, and URLs without their query string (a model path percent-encoded three times
    over took ten lines; the model row names the model already)."""
    lines = str(error).strip().splitlines() or [""]
    return visible(_QUERY.sub(r"\1", redact(lines[0])))


def one_line(text: str, style: str = "") -> Text:
    """`text` (already made visible) as one line, cut with "…" at the panel's width, never wrapped."""
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _short(error: str) -> str:
    """ "HTTP 404 from http://…/metrics: no Prometheus metrics" → "no /metrics (HTTP 404)"."""
    if error.startswith("HTTP ") and " from " in error:
        hint = error.split(": ", 1)[1] if ": " in error else ""
        return f"no /metrics ({error.split(' from ')[0]}){' — ' + hint if 'start' in hint else ''}"
    return error


def render_server(v: ServerView, compact: bool = False) -> Table | Text:
    if not v.url:
        return Text.assemble(
            (visible(v.search or "no server — pass --url"), "bold"),
            ("\ne.g. precmon --url http://127.0.0.1:8080, or run `precmon demo`", "dim"),
        )
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim", no_wrap=True, min_width=8)
    t.add_column(overflow="fold")
    url = Text(visible(redact_url(v.url)))  # never show a password in the URL
    url.append("  ")
    url.append_text(_health(v))
    if v.search and not v.stopped:  # stopped: the live row names the variant
        url.append(f"  ({visible(v.search)})", style="dim")
    t.add_row("url", url)
    kind = Text(visible(v.kind or "?"))
    if v.version:
        kind.append(f"  ({visible(v.version)})", style="dim")
    model = Text(visible(v.model or "?"))
    model.append("  ")
    model.append(visible(v.precision or ""), style="bold cyan")
    if v.failing:  # the last good figure is no news about a failing server
        tok = Text("n/a", style="bold")
        tok.append(f"  failing: {panel_error(v.failing)}", style="bold red")
        tok.no_wrap, tok.overflow = True, "ellipsis"
    else:
        tok = Text("n/a" if v.last_tok_s is None else f"{format_value(v.last_tok_s)} tok/s", style="bold")
        tok.append("  ")
        tok.append(sparkline(v.tok_s_series, 10 if compact else 16), style="green")
    ttft = Text("n/a" if v.last_ttft_s is None else f"{format_value(v.last_ttft_s)} s", style="bold")
    ttft.append("  ")
    ttft.append(sparkline(v.ttft_series, 10 if compact else 16), style="yellow")
    if v.last_phase and not compact:
        ttft.append("  ")
        ttft.append(f"last: {visible(v.last_phase)}", style="dim")
    if compact:
        model.append("  ")
        model.append_text(kind)
        tok.append("  TTFT ", style="dim")
        tok.append_text(ttft)
        t.add_row("model", model)
        t.add_row("decode", tok)
    else:
        t.add_row("kind", kind)
        t.add_row("model", model)
        t.add_row("decode", tok)
        t.add_row("TTFT", ttft)
    t.add_row("live", _metrics_line(v, compact))
    return t
