"""`precmon sweep SPEC.toml`: validate, then run headless (or in the TUI)."""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import threading
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon.cli.common import fail, host_for, open_meter, sampler_stats
from precmon.sweep.events import Log, RunLanded, SweepFinished, VariantFinished, VariantStarted
from precmon.sweep.events import Progress as ProgressEvent
from precmon.sweep.spec import SpecError, SweepSpec, load_spec


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
    if (out_dir / "results.json").exists() and not args.resume:
        return fail(f"{out_dir}/results.json exists: add --resume to continue that sweep, or choose another --out", 2)
    if args.resume and (out_dir / "results.json").exists():
        from precmon.measure.results import ResultsError, VariantResult, load_results

        try:
            for v in load_results(out_dir / "results.json")["variants"]:
                VariantResult.from_dict(v)
        except (ResultsError, KeyError, TypeError, ValueError) as exc:
            return fail(f"--resume: {out_dir}/results.json cannot be continued: {exc}", 2)
    if not args.headless and args.resume:
        print("precmon: --resume runs headless (the TUI always sweeps from the start)", file=sys.stderr)
    elif not args.headless and not sys.stdout.isatty():
        print("precmon: no terminal: running the sweep headless", file=sys.stderr)
    elif not args.headless:
        # imported here, not at the top: the headless path never loads textual (tests/test_layers.py)
        from precmon.cli.tui_cmd import run_sweep_app

        return run_sweep_app(spec, out_dir)
    code = run_headless(spec, out_dir, resume=args.resume)
    if args.json:
        try:
            shutil.copyfile(out_dir / "results.json", args.json)
        except OSError as exc:
            return fail(f"--json {args.json}: {exc.strerror or exc} (the results are in {out_dir})", 2)
    return code


def run_headless(spec: SweepSpec, out_dir: Path, resume: bool = False, meter=None) -> int:
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

    Console().print(to_rich_table(doc))
    print(f"results: {path} (journal: {runner.store.journal_path})", file=sys.stderr)
    if runner.interrupted:
        return 130
    not_ok = [f"{v['label']} {v['status']}" for v in doc["variants"] if v["status"] != "ok"]
    if not_ok:  # every variant is saved; exit 1 tells a script that not all of them measured cleanly
        print(f"not ok: {', '.join(not_ok)} (precmon sweep --resume measures them again)", file=sys.stderr)
    return 0 if doc["variants"] and not not_ok else 1
