"""`precmon sweep SPEC.toml`: validate, then run headless (or in the TUI)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import threading
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon.cli.common import fail, host_for, open_meter, sampler_stats
from precmon.measure.results import write_json_output
from precmon.sweep.events import Log, RunLanded, SweepFinished, VariantFinished, VariantStarted
from precmon.sweep.events import Progress as ProgressEvent
from precmon.sweep.spec import SpecError, SweepSpec, load_spec
from precmon.sweep.store import out_dir_problem


def default_out_dir() -> Path:
    return Path("precmon-results") / dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def run(args: argparse.Namespace) -> int:
    try:
        spec = load_spec(Path(args.spec))
    except SpecError as exc:
        return fail(str(exc), 2)
    if args.check:
        print(
            f"{args.spec}: ok, {len(spec.variants)} variants: "
            + ", ".join(f"{v.label} ({v.strategy})" for v in spec.variants)
        )
        return 0
    if args.resume and not args.out:
        return fail("--resume needs --out DIR (the folder of the sweep to continue)", 2)
    out_dir = Path(args.out) if args.out else default_out_dir()
    problem = out_dir_problem(out_dir)  # now, not after the first variant's minutes of measuring
    if problem:
        return fail(f"--out {out_dir}: {problem}", 2)
    if (out_dir / "results.json").exists() and not args.resume:
        return fail(f"{out_dir}/results.json exists: add --resume to continue that sweep, or choose another --out", 2)
    if args.resume and (out_dir / "results.json").exists():
        from precmon.measure.results import ResultsError, VariantResult, load_results

        try:
            for v in load_results(out_dir / "results.json")["variants"]:
                VariantResult.from_dict(v)
        except (ResultsError, KeyError, TypeError, ValueError) as exc:
            return fail(f"--resume: {out_dir}/results.json cannot be continued: {exc}", 2)
    if not args.headless:
        from precmon.cli.tui_cmd import run_sweep_app

        return run_sweep_app(spec, out_dir, resume=args.resume)
    return run_headless(spec, out_dir, resume=args.resume, json_out=args.json)


def run_headless(spec: SweepSpec, out_dir: Path, resume: bool = False, meter=None, json_out: str | None = None) -> int:
    from precmon.sweep.runner import SweepRunner

    err = Console(stderr=True)
    own_meter = meter is None
    if own_meter:
        meter, note = open_meter(True)
        if note:
            err.print(f"[yellow]power:[/] {note}")
    host = host_for(meter)
    progress = Progress(
        TextColumn("[bold]{task.fields[variant]}[/]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=False,
    )
    task = progress.add_task("", total=1, variant="sweep")
    stop = threading.Event()

    def on_event(ev) -> None:
        if isinstance(ev, VariantStarted):
            progress.update(
                task,
                completed=0,
                total=1,
                variant=f"[{ev.index + 1}/{ev.total}] {ev.label}",
                description=f"starting ({ev.strategy})",
            )
        elif isinstance(ev, ProgressEvent):
            progress.update(task, completed=ev.done, total=max(ev.total, 1), description=ev.text)
        elif isinstance(ev, VariantFinished):
            r = ev.result
            dec = r.metrics.get("decode_tok_s")
            progress.console.print(
                f"{r.label}: {r.status}"
                + (f", decode {dec:.1f} tok/s" if dec else "")
                + (f" — {r.errors[0]}" if r.status == "failed" and r.errors else "")
            )
        elif isinstance(ev, Log):
            progress.console.print(f"[dim]{ev.text}[/]")
        elif isinstance(ev, (RunLanded, SweepFinished)):
            pass

    runner = SweepRunner(spec, out_dir, meter=meter, host=host, resume=resume, on_event=on_event, stop=stop)
    import time

    started = time.monotonic()
    try:
        with progress:
            path = runner.run()
        stats = sampler_stats(meter, time.monotonic() - started)
        if stats:
            runner.store.host["sampler"] = stats
            path = runner.store.write(runner.order)
    finally:
        if own_meter and meter is not None:
            meter.stop()
    doc = runner.store.document(runner.order)
    from precmon.report.table import to_rich_table

    Console(stderr=json_out == "-").print(to_rich_table(doc))  # `--json -`: stdout holds only the JSON
    journal = runner.store.rescued_to / "journal.jsonl" if runner.store.rescued_to else runner.store.journal_path
    print(f"results: {path} (journal: {journal})", file=sys.stderr)
    if json_out:
        try:
            write_json_output(json_out, doc)
        except OSError as exc:
            return fail(f"--json {json_out}: {exc.strerror or exc} (the results are in {path})", 2)
    if runner.store.rescued:  # every run is kept, but not where --out said: a script must notice
        print(f"precmon sweep: --out {out_dir} failed mid-sweep; the results are in {path.parent}", file=sys.stderr)
        return 1
    if runner.interrupted:
        return 130
    not_ok = [f"{v['label']} {v['status']}" for v in doc["variants"] if v["status"] != "ok"]
    if not_ok:  # every variant is saved; exit 1 tells a script that not all of them measured cleanly
        print(f"not ok: {', '.join(not_ok)} (precmon sweep --resume measures them again)", file=sys.stderr)
    return 0 if doc["variants"] and not not_ok else 1
