"""The measure worker: a bench (`b`), a sweep (`s`) and an export (`e`), one thread each.

A bench is `precmon.api.measure`, as `precmon bench` is (quality too, when the sweep file the TUI
was started with turns it on): a sweep of one variant into `bench-<time>/` of the results folder,
every run journaled as it lands. A sweep is `precmon.api.sweep` into the results folder, or into
a `sweep-<time>/` of it once an earlier sweep's results are there or another precmon writes it
(a second sweep of the session would otherwise overwrite them: `sweep.store.unused_folder`). Both talk
to their servers through `AbortableServer`, so quitting mid-request ends them at once the normal
way: the variant records the reason and keeps the runs that landed, the runner stops any server it
launched and writes results.json before `Ended` is posted. A bench that ends on an unexpected error
is saved too, as a failed variant that keeps its runs and names the error, so the sweep table
never stays "measuring…" and `e` can export it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precmon import api
from precmon.core.schema import Preflight, ResultsDoc
from precmon.report.export import export_all
from precmon.sweep.auto import spec_from_server
from precmon.sweep.events import Log, SweepEvent
from precmon.sweep.launched import stop_leftovers
from precmon.sweep.quality_step import bench_quality
from precmon.sweep.spec import SweepSpec, load_spec
from precmon.sweep.store import ResultStore, new_child, unused_folder
from precmon.tui.config import ServerConfig
from precmon.tui.messages import Exported, MeasureEnded, PreflightFound, SweepEventArrived, SweepPlanned
from precmon.tui.workers.background import Post, Quitting, abortable
from precmon.tui.workers.power_worker import OPEN_WAIT_S, PowerWorker
from precmon.tui.workers.server_worker import one_line

NOT_MEASURED = "not measured: quit at the preflight's findings"


class MeasureWorker:
    """Runs one measurement at a time; every result goes to `results_dir()`."""

    def __init__(
        self,
        post: Post,
        quitting: Quitting,
        power: PowerWorker,
        results_dir: Callable[[], Path],
        report: dict[str, Any] | None = None,
    ) -> None:
        self.post, self.quitting, self.power, self.results_dir = post, quitting, power, results_dir
        self.report = dict(report or {})  # how the results are judged (`--max-kld`): kept in every document
        self._thread: threading.Thread | None = None
        self.saved: list[Path] = []  # every results file written this session (printed on exit)
        self.journal: Path | None = None  # the sweep's journal: every run, as it landed
        self.sweep_dir: Path | None = None  # the last sweep's folder (its quality reference: `b`)
        self._stores: list[ResultStore] = []  # each sweep's store: whether --out failed (`misplaced`)
        self.refused: list[str] = []  # preflight findings the user quit at (printed on exit)
        self._accepted: list[str] = []  # findings already measured anyway this session: not asked again

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def misplaced(self) -> list[str]:
        """One line per sweep whose results folder failed (disk full, read-only, deleted) and whose
        results went on into the rescue folder (`sweep/store.py`): the session then exits 1, as
        `precmon sweep --headless` does (docs/design.md §3), so a script notices."""
        return [
            f"{s.out_dir} failed mid-sweep; the results are in {s.rescued_to}"
            for s in self._stores
            if s.rescued_to is not None
        ]

    # ---- b: bench the configured server ---------------------------------------------------------
    def bench(self, config: ServerConfig, stop: threading.Event, spec: SweepSpec | str | Path | None = None) -> None:
        """Bench the configured server (`sweep.execute.run_variant`, as `precmon bench` does);
        with quality on in the sweep file `spec` (the TUI's `--sweep`), it scores quality too."""
        self._thread = self.quitting.spawn("bench", lambda: self._at_full_rate(self._bench, config, stop, spec))

    def _bench(self, config: ServerConfig, stop: threading.Event, spec: SweepSpec | str | Path | None = None) -> None:
        emit = self._emitter("bench")
        if not config.url:
            self.post(MeasureEnded("bench", error="no server to bench"))
            return
        preflight = self._box_checked([config.url], "bench", stop)
        if preflight is None:
            self.post(MeasureEnded("bench", error=NOT_MEASURED))
            return
        self._power_ready(emit)
        out = new_child(self.results_dir(), "bench")
        try:
            ended = api.measure(
                config.url,
                settings=config.settings,
                out=out,
                kind=config.kind,
                model=config.model,
                api_key=config.api_key,
                report=self.report,
                quality=bench_quality(spec, self.sweep_dir or self.results_dir(), emit),
                meter=self.power.measuring_meter(),
                host=self.power.host(),
                on_event=emit,
                stop=stop,
                wrap_server=lambda server: abortable(server, self.quitting.event),
                store_ready=self._keep_store,
                preflight=preflight,
            )
        except Exception as exc:  # noqa: BLE001 - the folder could not be made: nothing measured, the reason shown
            self.post(MeasureEnded("bench", error=f"{type(exc).__name__}: {one_line(exc)}"))
            return
        result = ended.doc.variants[0] if ended.doc.variants else None
        if not ended.reached or result is None:
            error = (result.errors if result else None) or ["the server did not answer"]
            self.post(MeasureEnded("bench", error=error[0]))
            return
        self.saved.append(ended.results_path)
        emit(Log(f"bench {result.label}: {result.status}; saved {ended.results_path}"))
        crash = result.errors[0] if result.status == "failed" and result.errors else None
        self.post(MeasureEnded("bench", error=crash, results_path=ended.results_path))

    def _keep_store(self, store: ResultStore) -> None:
        """Keep a measurement's store (whether its folder failed) and its journal's path."""
        self.journal = store.journal_path
        self._stores.append(store)

    # ---- s: the sweep ---------------------------------------------------------------------------------
    def sweep(self, config: ServerConfig, spec: SweepSpec | str | Path | None, stop: threading.Event) -> None:
        self._thread = self.quitting.spawn("sweep", lambda: self._at_full_rate(self._sweep, config, spec, stop))

    def _at_full_rate(self, measure: Callable[..., None], *args: Any) -> None:
        """Run a bench or sweep with the power sampler at its full rates (`precmon.tui.pace`)."""
        with self.power.full_rate():
            measure(*args)

    def _sweep(self, config: ServerConfig, spec_source: SweepSpec | str | Path | None, stop: threading.Event) -> None:
        emit = self._emitter("sweep")
        try:
            spec = self._spec(config, spec_source)
            spec.report |= self.report  # the TUI's --max-kld over the sweep file's max_kld
            preflight = self._box_checked([v.url for v in spec.variants if v.url], "sweep", stop)
            if preflight is None:
                self.post(MeasureEnded("sweep", error=NOT_MEASURED))
                return
            self._power_ready(emit)
            out, why = unused_folder(self.results_dir(), "sweep")
            if why:  # what a killed earlier sweep left running there is stopped, as a sweep there would
                for note in stop_leftovers(self.results_dir()):
                    emit(Log(note))
            emit(Log(f"sweep: {len(spec.variants)} variants → {out}" + (f" ({why})" if why else "")))
            self.sweep_dir = out  # a later bench scores against this sweep's quality reference
            self.post(SweepPlanned(spec, out))
            ended = api.sweep(
                spec,
                out=out,
                meter=self.power.measuring_meter(),
                host=self.power.host(),
                on_event=emit,
                stop=stop,
                wrap_server=lambda server: abortable(server, self.quitting.event),
                store_ready=self._keep_store,
                preflight=preflight,
            )
            path = ended.results_path
            self.saved.append(path)
            self.post(MeasureEnded("sweep", results_path=path))
        except Exception as exc:  # noqa: BLE001 - a bad spec or dead server ends the sweep, shown
            self.post(MeasureEnded("sweep", error=one_line(exc)))

    @staticmethod
    def _spec(config: ServerConfig, source: SweepSpec | str | Path | None) -> SweepSpec:
        if isinstance(source, SweepSpec):
            return source
        if source is not None:
            return load_spec(Path(source))
        if not config.url:
            raise RuntimeError("no sweep file and no server: pass --sweep FILE or --url URL")
        return spec_from_server(config.url, config.kind, config.settings, config.api_key)

    def _box_checked(self, urls: list[str], source: str, stop: threading.Event) -> Preflight | None:
        """The preflight (docs/design.md §4); with findings, the app asks (`screens/preflight.py`)
        and this thread waits for the answer, once a session for the same findings. None: quit at
        the findings, or stopped meanwhile."""
        preflight = api.preflight(urls)
        if not preflight.findings or preflight.findings == self._accepted:
            return preflight
        decided, answers = threading.Event(), []

        def answer(go: bool) -> None:
            answers.append(go)
            decided.set()

        self.post(PreflightFound(list(preflight.findings), source, answer))
        while not decided.wait(0.2):
            if self.quitting.is_set or stop.is_set():
                return None
        if not answers[0]:
            self.refused = list(preflight.findings)
            return None
        self._accepted = list(preflight.findings)
        return preflight

    def _power_ready(self, emit: Callable[[SweepEvent], None]) -> None:
        """Wait for the power sources before measuring (a sweep started at mount came first)."""
        if not self.power.wait_ready():
            emit(Log(f"power sources not open after {OPEN_WAIT_S:.0f} s: measuring without power"))

    def _emitter(self, source: str) -> Callable[[SweepEvent], None]:
        def emit(event: SweepEvent) -> None:
            self.post(SweepEventArrived(event, source))

        return emit

    # ---- e: export ----------------------------------------------------------------------------------
    def export(self, doc: ResultsDoc, folder: Path, svg: str) -> None:
        self.quitting.spawn("export", lambda: self._export(doc, folder, svg))

    def _export(self, doc: ResultsDoc, folder: Path, svg: str) -> None:
        try:
            written = export_all(doc, folder, stem="report")
            shot = folder / "screenshot.svg"
            shot.write_text(svg, encoding="utf-8")
            files = tuple(p.name for p in [*written.values(), shot])
            self.post(Exported(folder, files))
        except Exception as exc:  # noqa: BLE001
            self.post(Exported(folder, (), error=one_line(exc)))
