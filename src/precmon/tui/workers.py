"""The app's thread workers: every blocking call (sysfs/NVML reads, HTTP, a whole sweep) runs
here and reports by posting a message from `precmon.tui.messages`; none touches a widget.

Each loop waits on `self._shutdown_event` (set when the app unmounts) rather than sleeping, so quitting
never waits out a sleep; a request in flight finishes (or times out) first.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from textual import work

from precmon.measure.bench import Bench, BenchSettings, headline_window
from precmon.measure.decode_window import cut_prefill
from precmon.measure.prompts import PromptBuilder
from precmon.measure.results import decode_energy_per_token, host_from_meter, results_document, write_json_atomic
from precmon.measure.timing import measure_once
from precmon.power.energy import joules_per_token
from precmon.servers.base import ServerError
from precmon.sweep.events import Log, Progress, RunLanded, VariantFinished, VariantStarted
from precmon.tui.live import power_snapshot
from precmon.tui.messages import Measure, Power, Server

PAINT_S = 0.25  # power snapshots at 4 Hz: the repaint rate of the live panels
SERVER_POLL_S = 1.0  # /metrics scrape period while the server has /metrics
DISCOVER_EVERY_S = 5.0  # without --url: how often to look on the usual ports until a server answers
HEALTH_EVERY = 4  # ticks between health checks (and between scrapes of a server without /metrics)


def default_meter_factory() -> tuple[Any, list[Any], str | None]:
    """A started PowerSampler over every source found here, the absences, and a note if it failed."""
    try:
        from precmon.power.sampler import PowerSampler

        sampler = PowerSampler()
        sampler.start()
    except Exception as exc:  # a broken source must never keep the UI from starting
        return None, [], f"power sampling failed to start: {type(exc).__name__}: {exc}"
    return sampler, list(sampler.unavailable), None


def _metrics_module() -> Any:
    try:
        from precmon.servers import metrics
    except ImportError:
        return None
    return metrics


class WorkersMixin:
    """Mixed into `PrecmonApp`; uses its url/model/server_kind/api_key/settings attributes."""

    _shutdown_event: threading.Event
    meter: Any = None

    # power -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="power", name="power")
    def power_worker(self) -> None:
        meter, unavailable, note = self.meter_factory()
        self.meter = meter
        try:
            last = None
            while not self._shutdown_event.is_set():
                snap = power_snapshot(meter, unavailable, note=note)
                if snap != last:  # an unchanged reading costs no repaint
                    self.post_message(Power.Sampled(snap))
                    last = snap
                self._shutdown_event.wait(PAINT_S)
        finally:
            if meter is not None:
                meter.stop()

    def measuring_meter(self) -> Any:
        """The meter to hand to a measurement: only one that has a channel with watts."""
        m = self.meter
        return m if m is not None and any(c.has_watts for c in m.channels()) else None

    # server discovery (no --url): the usual local ports, once --------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="discover", name="discover")
    def discover_worker(self) -> None:
        """Look on the usual ports until a healthy server answers (a demo may start precmon first).

        Each look is six local connects, refused at once when nothing listens; a message is posted
        only when what was found changes, so an empty look costs no repaint."""
        from precmon.servers.detect import discover_servers

        last: object = None
        while not self._shutdown_event.is_set() and not self.url:
            try:
                msg = Server.Discovered(discover_servers(timeout_s=1.0))
            except Exception as exc:  # noqa: BLE001 - shown, and the app keeps working without a server
                msg = Server.Discovered([], error=_one_line(exc))
            key = (tuple(sorted((e.get("url"), bool(e.get("healthy"))) for e in msg.entries)), msg.error)
            if key != last:
                self.post_message(msg)
                last = key
            if any(e.get("healthy") for e in msg.entries):
                return
            self._shutdown_event.wait(DISCOVER_EVERY_S)

    # server: health, model facts, passive /metrics ----------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="server", name="server")
    def server_worker(self) -> None:
        from precmon.servers.detect import make_server

        adapter, poller, tick, facts = None, None, 0, None
        metrics = _metrics_module()
        self._scrape_failed = False
        while not self._shutdown_event.is_set():
            if tick % HEALTH_EVERY == 0:
                try:
                    if adapter is None:
                        adapter = make_server(self.url, kind=self.server_kind, api_key=self.api_key, timeout_s=5.0)
                    if not adapter.health():
                        raise ServerError(f"{self.url}: health check failed")
                    if facts is None:
                        facts = self._server_facts(adapter)
                        self.metrics_model = self.metrics_model or facts.get("model")
                    self.post_message(Server.Probed(self.url, True, **facts))
                except ServerError as exc:
                    adapter, facts = None, None
                    self.post_message(Server.Probed(self.url, False, error=str(exc)))
            # A server without /metrics (or down) is asked again every few seconds, not every second.
            if metrics is None:
                if tick == 0:
                    self.post_message(Server.MetricsScraped(None, "no /metrics support in this precmon"))
            elif not self._scrape_failed or tick % HEALTH_EVERY == 0:
                if poller is None or poller.model != self.metrics_model:
                    if poller is not None:
                        poller.close()
                    poller = metrics.MetricsPoller(self.url, model=self.metrics_model)
                self._scrape(poller)
            tick += 1
            self._shutdown_event.wait(SERVER_POLL_S)
        if poller is not None:
            poller.close()

    def _server_facts(self, adapter: Any) -> dict[str, Any]:
        facts: dict[str, Any] = {"kind": adapter.kind}
        try:
            facts["version"] = adapter.version()
            facts["models"] = tuple(m.name for m in adapter.list_models())
            info = adapter.model_info(self.model)
            if info is not None:
                facts["model"], facts["quantization"] = info.name, info.quantization
        except ServerError:
            pass
        return facts

    def _scrape(self, poller: Any) -> None:
        meter = self.measuring_meter() if self.watching else None
        try:
            rates = poller.poll()
        except ServerError as exc:
            self._scrape_failed = True
            self.post_message(Server.MetricsScraped(None, str(exc)))
            return
        self._scrape_failed = False
        jpt = None
        if meter is not None:
            # Energy over the same interval as the scrape delta: the window closes at this scrape.
            if getattr(self, "_watch_phase_open", False):
                w = headline_window(meter.end("watch"))
                if w is not None and rates is not None and rates.generation_tok_s:
                    jpt = joules_per_token(w.energy_j, round(rates.generation_tok_s * rates.interval_s))
            meter.begin("watch")
            self._watch_phase_open = True
        self.post_message(Server.MetricsScraped(rates, None, jpt))

    # --drive: a steady load of real, measured decode requests -----------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="drive", name="drive")
    def drive_worker(self) -> None:
        from precmon.servers.detect import make_server

        s = self.settings or BenchSettings.quick()
        while not self._shutdown_event.is_set() and self.drive:
            try:
                server = make_server(self.url, kind=self.server_kind, api_key=self.api_key, timeout_s=s.timeout_s)
                server.ensure_loaded(self.model, timeout_s=max(s.timeout_s, 300.0))
                builder = PromptBuilder(None)
                while not self._shutdown_event.is_set() and self.drive:
                    self._drive_once(server, builder, s)
            except ServerError as exc:
                self.post_message(Server.DriveMeasured(None, None, None, error=str(exc)))
                self._shutdown_event.wait(2.0)

    def _drive_once(self, server: Any, builder: PromptBuilder, s: BenchSettings) -> None:
        meter = self.measuring_meter()
        t0 = time.monotonic()
        if meter is not None:
            meter.begin("drive")
        prompt = builder.build(s.decode_prompt_tokens)
        try:
            run, res = measure_once(server, "decode", prompt, s.output_tokens, self.model, s.timeout_s)
        finally:
            windows = meter.end("drive") if meter is not None else []
        if res.prompt_tokens:
            builder.calibrate(len(prompt.text.split()) - 1, res.prompt_tokens)
        w = headline_window(windows)
        watts = jpt = None
        if w is not None and run.ok:  # the same decode window as a bench: first token → end
            run.power_w, run.energy_j = w.avg_watts, w.energy_j
            cut_prefill(meter, t0, w, run, res)
            watts = run.power_w
            jpt = decode_energy_per_token(run.energy_j, run.output_tokens, run.extra)
        self.post_message(Server.DriveMeasured(run, watts, jpt, None if run.ok else run.reason))

    # b: bench the current server ----------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="measure", name="bench")
    def bench_worker(self, stop: threading.Event) -> None:
        from precmon.servers.detect import make_server

        s = self.settings or BenchSettings.quick()
        post = self._poster("bench")
        try:
            server = make_server(self.url, kind=self.server_kind, api_key=self.api_key, timeout_s=s.timeout_s)
            info = server.model_info(self.model)
            label = (info.quantization or info.name) if info else (self.model or "server")
            post(VariantStarted(label, 0, 1, "bench"))
            result = Bench(
                server,
                s,
                model=self.model,
                label=label,
                meter=self.measuring_meter(),
                stop=stop,
                progress=lambda d, t, x: post(Progress(label, d, t, x)),
                on_run=lambda r: post(RunLanded(label, r)),
            ).run()
            server.close()
            doc = results_document([result], s.to_dict(), self._host())
            path = self.results_dir() / f"bench-{_safe(label)}-{time.strftime('%H%M%S')}.json"
            write_json_atomic(path, doc)
            post(VariantFinished(result, path))
            post(Log(f"bench {label}: {result.status}; saved {path}"))
            self.post_message(Measure.Ended("bench", results_path=path))
        except Exception as exc:  # noqa: BLE001 - any failure ends the bench with its reason shown
            self.post_message(Measure.Ended("bench", error=_one_line(exc)))

    # s: the sweep --------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="measure", name="sweep")
    def sweep_worker(self, stop: threading.Event) -> None:
        from precmon.sweep.runner import SweepRunner

        post = self._poster("sweep")
        try:
            spec = self._sweep_spec()
            out = self.results_dir()
            post(Log(f"sweep: {len(spec.variants)} variants → {out}"))
            self.post_message(Measure.Planned(spec, out))
            runner = SweepRunner(spec, out, meter=self.measuring_meter(), host=self._host(), on_event=post, stop=stop)
            path = runner.run()
            self.post_message(Measure.Ended("sweep", results_path=path))
        except Exception as exc:  # noqa: BLE001 - a bad spec or dead server ends the sweep, shown
            self.post_message(Measure.Ended("sweep", error=_one_line(exc)))

    def _sweep_spec(self) -> Any:
        if self.sweep_spec is not None:
            from precmon.sweep.spec import SweepSpec, load_spec

            return self.sweep_spec if isinstance(self.sweep_spec, SweepSpec) else load_spec(Path(self.sweep_spec))
        if not self.url:
            raise ServerError("no sweep file and no server: pass --sweep FILE or --url URL")
        from precmon.sweep.auto import spec_from_server

        return spec_from_server(self.url, self.server_kind, self.settings or BenchSettings.quick(), self.api_key)

    def _poster(self, source: str):
        return lambda ev: self.post_message(Measure.EventArrived(ev, source))

    def _host(self) -> dict[str, Any]:
        return host_from_meter(self.meter)

    # e: export ------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="export", name="export")
    def export_worker(self, doc: dict[str, Any], folder: Path, svg: str) -> None:
        from precmon.report.export import export_all

        try:
            written = export_all(doc, folder, stem="report")
            shot = folder / "screenshot.svg"
            shot.write_text(svg, encoding="utf-8")
            files = tuple(p.name for p in [*written.values(), shot])
            self.post_message(Measure.Exported(folder, files))
        except Exception as exc:  # noqa: BLE001
            self.post_message(Measure.Exported(folder, (), error=_one_line(exc)))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
