"""Watch mode's state line: whose traffic the big numbers are, and where tok/s comes from.

A room reading a big "0" must know whether the server is idle, precmon is not looking, or the
server has no counter that moves while a request runs (Ollama). So the line under the readouts
opens with one of five words, then says why (a failing `--drive` request says FAILING):

- DRIVING: precmon's own traffic: the steady load of measured requests of `--drive` (tok/s and
  J/token are those requests' decode figures), or a bench or sweep it runs (the live source then
  counts precmon's own requests, and why its figure may be off is said as under UNSURE).
- PASSIVE: other clients' traffic, read from the server's live source (named).
- NO LIVE SOURCE: the server has no token counter that moves mid-request (the reason, e.g.
  Ollama's); tok/s stays "--", never a made-up 0. Watts are still live.
- UNSURE: other clients' traffic, but the tok/s shown may be off (precmon's reads ran late, the
  answers were slow, the server's pace was uneven, or no reading came: the reason is named;
  `precmon.servers.watch.rate_window` decides).
- NO SERVER: nothing to read yet (discovery still looking, or no --url).

Plain Python, no textual: the watch view (`widgets/watch_view.py`) computes and draws it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from precmon.servers.watch.live_rate import LiveRate
from precmon.untrusted import redact_url, visible

SCOPE_NAMES = {"gpu": "GPU", "package": "package", "system": "system", "cpu": "CPU"}


@dataclass(frozen=True)
class WatchState:
    word: str  # DRIVING | PASSIVE | UNSURE | NO LIVE SOURCE | NO SERVER
    detail: str

    @property
    def text(self) -> str:
        return f"{self.word} — {self.detail}"


def failing_text(failures: int, since_unix_s: float) -> str:
    """ "3 failed requests since 18:02:11" (local time: what the room's clock says)."""
    plural = "" if failures == 1 else "s"
    return f"{failures} failed request{plural} since {time.strftime('%H:%M:%S', time.localtime(since_unix_s))}"


def drive_stopped_line(error: str, failures: int, retry_in_s: float, since_unix_s: float) -> str:
    """What FAILING says, and the log with it: the count and since when, why, and when it retries
    (until quit: it recovers when the server does)."""
    return f"--drive stopped: {failing_text(failures, since_unix_s)} — {error} — retrying in {retry_in_s:.0f} s"


def scope_name(scope: str | None) -> str:
    """ "gpu" → "GPU": the scope as the readout titles name it ("watts · GPU")."""
    return SCOPE_NAMES.get(scope or "", scope or "?")


def watch_state(
    url: str | None,
    drive: bool,
    rate: LiveRate | None,
    search: str | None = None,
    measuring: str | None = None,
    unsure: str | None = None,
) -> WatchState:
    """The state line for the server at `url` (None: none yet), its last live-rate reading, the
    bench or sweep precmon runs now (`measuring`: "bench" | "sweep" | None), and why the tok/s
    shown may be off (`unsure`, from the readout's window; None: it is not)."""
    if not url:
        if search and search.endswith("…"):
            return WatchState("NO SERVER", f"{search} (watch shows power meanwhile)")
        if search and "still looking" in search:
            why = "no server yet — looking on the usual local ports every 5 s, or pass --url (power meanwhile)"
            return WatchState("NO SERVER", why)
        return WatchState("NO SERVER", "no server — pass --url (watch shows power only)")
    where = f"{visible(redact_url(url))} · w: back to the tables"
    if drive:
        return WatchState("DRIVING", f"driving a steady load of measured requests (precmon's own) · {where}")
    if measuring:  # the readout is the live window's, as when passive: its "⚠ … see below" points here
        live = rate is not None and rate.tok_s is not None
        source = f"live source: {visible(rate.source)}" if live and rate is not None else ""
        doubt = f"tok/s {visible(unsure)}" if live and unsure else ""
        what = f"precmon's own {measuring} is the traffic (its requests, measured)"
        return WatchState("DRIVING", " · ".join(x for x in (what, doubt, source, where) if x))
    if rate is not None and rate.unavailable:
        return WatchState("NO LIVE SOURCE", f"{visible(rate.unavailable)}; watts are live · {where}")
    if rate is not None and rate.tok_s is not None and unsure:
        return WatchState("UNSURE", f"tok/s {visible(unsure)} · other clients' traffic · {where}")
    if rate is not None and rate.tok_s is not None:
        source = f"live source: {visible(rate.source)}"
        return WatchState(
            "PASSIVE", f"other clients' traffic (precmon sends none; --drive adds a load) · {source} · {where}"
        )
    if rate is not None and rate.error:
        return WatchState("PASSIVE", f"the live source failed this read: {visible(rate.error)} · {where}")
    return WatchState(
        "PASSIVE", f"reading the server's own token counters (precmon sends no load; --drive adds one) · {where}"
    )
