"""precmon as a library: measure a server, run a sweep, load and compare results files.

The one way in for every front end: `precmon bench`, `precmon sweep`, `precmon demo` and the TUI's
`b` and `s` call `measure` and `sweep` here, so each measurement goes through the same sweep
runner (sweep/runner.py: the one Job builder, `execute.run_variant`) and the same writer (the
results store: a journal fsynced as every run lands, `results.json` rewritten after every
variant). A bench is a sweep of one variant, with its folder, journal and exit code.

    from precmon import api
    from precmon.core.settings import BenchSettings

    ended = api.measure("http://127.0.0.1:8080", settings=BenchSettings.quick())
    v = ended.doc.variants[0]
    print(v.label, v.status, v.metrics["decode_tok_s"], ended.results_path)
    doc = api.load(ended.results_path)            # a results file, validated, typed
    table = api.compare([ended.results_path, "other-machine.json"])

Nothing here prints, and nothing imports Textual.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.core import stops
from precmon.core.schema import Host, Preflight, ResultsDoc
from precmon.core.settings import BenchSettings
from precmon.measure.trust.preflight import run_preflight
from precmon.power.base import EnergyMeter
from precmon.report.analysis.compare import merge_documents
from precmon.report.importers.dispatch import load_any
from precmon.report.model import CompareDoc
from precmon.servers.base import Server
from precmon.sweep.events import SweepEvent
from precmon.sweep.quality_step import QualityJob
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import SweepSpec, Variant
from precmon.sweep.store import ResultStore

EventFn = Callable[[SweepEvent], None]


@dataclass(frozen=True)
class Ended:
    """How a measurement ended, and where its results are.

    Attributes:
        doc: the results document as written (`results.json`).
        results_path: where it is (the rescue folder's, after a write fault in `out`).
        journal_path: every run, as it landed.
        interrupted: Ctrl-C, SIGTERM or SIGHUP (or a stop) cut it short; what was measured is kept.
        rescued_to: set when `out` failed mid-way and the results went to the rescue folder.
        reached: some variant's server answered (False: nothing was measured; the errors say why).
    """

    doc: ResultsDoc
    results_path: Path
    journal_path: Path
    interrupted: bool
    rescued_to: Path | None
    reached: bool = True


def default_sweep_dir() -> Path:
    """Where a sweep writes without `--out`: ./precmon-results/<start time>."""
    return Path("precmon-results") / dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def default_bench_dir() -> Path:
    """Where a bench writes without `--out`: $PRECMON_BENCH_DIR, else the precmon cache's bench/,
    in a folder per start time and pid (`-2`, `-3`... for a second bench of the process in the same
    second: a folder with results refuses a new one), so its runs are on disk whatever happens, and
    out of the user's working folder."""
    base = os.environ.get("PRECMON_BENCH_DIR") or Path(
        os.environ.get("PRECMON_CACHE") or Path.home() / ".cache" / "precmon", "bench"
    )
    stem = f"{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    path, n = Path(base) / stem, 1
    while path.exists():
        n += 1
        path = Path(base) / f"{stem}-{n}"
    return path


def bench_spec(
    url: str,
    settings: BenchSettings,
    *,
    kind: str = "auto",
    model: str | None = None,
    label: str | None = None,
    precision: str | None = None,
    api_key_env: str | None = None,
    api_key: str | None = None,
) -> SweepSpec:
    """A bench as a sweep of one variant on a running server (named by the server unless
    `label` is given)."""
    variant = Variant(
        label=label or "",
        precision=precision or "",
        url=url,
        model=model,
        server=kind,
        api_key_env=api_key_env,
        api_key=api_key,
        settings=settings,
    )
    return SweepSpec(path=None, variants=[variant], cooldown_s=0.0, settings=settings)


def measure(
    url: str,
    *,
    settings: BenchSettings | None = None,
    out: Path | str | None = None,
    kind: str = "auto",
    model: str | None = None,
    label: str | None = None,
    precision: str | None = None,
    api_key_env: str | None = None,
    api_key: str | None = None,
    report: dict[str, object] | None = None,
    quality: QualityJob | None = None,
    notes: Sequence[str] = (),
    meter: EnergyMeter | None = None,
    host: Host | None = None,
    on_event: EventFn | None = None,
    stop: threading.Event | None = None,
    wrap_server: Callable[[Server], Server] | None = None,
    store_ready: Callable[[ResultStore], None] | None = None,
    preflight: Preflight | None = None,
) -> Ended:
    """Bench one running server (docs/design.md §3 `bench`): its plan, quality when `quality` is
    given, every run journaled in `out` (default: `default_bench_dir()`); `preflight` as `sweep`'s."""
    spec = bench_spec(
        url,
        settings or BenchSettings(),
        kind=kind,
        model=model,
        label=label,
        precision=precision,
        api_key_env=api_key_env,
        api_key=api_key,
    )
    spec.report = dict(report or {})
    return sweep(
        spec,
        out=Path(out) if out is not None else default_bench_dir(),
        meter=meter,
        host=host,
        on_event=on_event,
        stop=stop,
        wrap_server=wrap_server,
        quality_for=lambda v: quality,
        notes=notes,
        store_ready=store_ready,
        preflight=preflight,
    )


def preflight(urls: Sequence[str] = (), nvml: Any = None) -> Preflight:
    """Check this box before measuring (docs/design.md §4 "Preflight"): power limits, idle clocks,
    other jobs on the GPU (the servers at `urls` are not others), the CPU governor, swap and
    HugePages. `findings` is [] on a box fit to measure; a front end shows the findings before it
    measures and passes the result on to `measure`/`sweep`, which keep it in the results."""
    return run_preflight(urls, nvml)


def sweep(
    spec: SweepSpec,
    *,
    out: Path | str,
    resume: bool = False,
    replan: bool = False,
    meter: EnergyMeter | None = None,
    host: Host | None = None,
    on_event: EventFn | None = None,
    stop: threading.Event | None = None,
    wrap_server: Callable[[Server], Server] | None = None,
    quality_for: Callable[[Variant], QualityJob | None] | None = None,
    notes: Sequence[str] = (),
    store_ready: Callable[[ResultStore], None] | None = None,
    preflight: Preflight | None = None,
) -> Ended:
    """Run a sweep (docs/design.md §6) into `out`; `resume` continues one already there, if it was
    measured with the same plan (`replan`: measure again what a changed plan touches).

    Raises:
        FolderBusy: another live precmon writes `out` (sweep/folder_lock.py); nothing was done.
        FolderHasResults: not `resume`, and `out` holds an earlier sweep's results or journal
            (sweep/store.py `earlier_results`); nothing was done but stopping the servers that
            sweep left running.
        PlanChanged: `resume` found `out` measured with another plan (sweep/resume.py); nothing was done.

    `store_ready` gets the results store before anything is measured (the TUI and the CLI read
    its paths, whether `out` failed, and add the sampler's figures to its host). `preflight`: the
    box as the front end checked and showed it (`preflight()`); None checks it here, so every
    measurement has its box checked and its findings kept."""
    if preflight is None:
        preflight = run_preflight([v.url for v in spec.variants if v.url])
    runner = SweepRunner(
        spec,
        Path(out),
        meter=meter,
        host=host,
        resume=resume,
        replan=replan,
        on_event=on_event,
        stop=stop or stops.Stop(),
        wrap_server=wrap_server,
        quality_for=quality_for,
        notes=notes,
        preflight=preflight,
    )
    if store_ready is not None:
        store_ready(runner.store)
    path = runner.run()
    return Ended(
        doc=runner.store.document(runner.order),
        results_path=path,
        journal_path=(runner.store.rescued_to or runner.store.out_dir) / "journal.jsonl",
        interrupted=runner.interrupted,
        rescued_to=runner.store.rescued_to,
        reached=runner.reached,
    )


def load(path: Path | str) -> ResultsDoc:
    """A results file, validated and typed (`report.load.load_document`; llama-bench and
    llama-benchy JSON files become documents too). Raises DocumentError, one line naming the
    file and the field."""
    return load_any(path)


def compare(paths: Sequence[Path | str], group: str = "file") -> CompareDoc:
    """Several results files side by side, as `precmon compare` merges them (columns relabelled
    by file or precision, where each came from in `sources`)."""
    return merge_documents([load_any(p) for p in paths], [str(p) for p in paths], group=group)


__all__ = [
    "Ended",
    "bench_spec",
    "compare",
    "default_bench_dir",
    "default_sweep_dir",
    "load",
    "measure",
    "preflight",
    "sweep",
]
