"""`precmon bench`: measure one running server headless, print the table, write JSON."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon.cli.common import UsageError, fail, host_for, open_meter, open_server, settings_from_args
from precmon.measure.bench import Bench
from precmon.measure.results import output_problem, results_document, write_json_output
from precmon.servers.base import ServerError


def run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    err = Console(stderr=True)
    if args.json:  # find out now, not after minutes of measuring
        problem = output_problem(args.json)
        if problem:
            return fail(f"--json {args.json}: {problem}", 2)
    try:
        server = open_server(args, timeout_s=settings.timeout_s)
        if not server.health():
            return fail(f"{args.url}: the server answers but is not healthy (still loading a model?)", 1)
    except ServerError as exc:
        return fail(str(exc), 1)
    except UsageError as exc:
        return fail(str(exc), 2)
    meter, power_note = open_meter(not args.no_power)
    progress = Progress(
        TextColumn("[bold]bench[/]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    )
    task = progress.add_task("starting", total=1)

    def on_progress(done: int, total: int, text: str) -> None:
        progress.update(task, completed=done, total=total, description=text)

    bench = Bench(
        server,
        settings,
        model=args.model,
        label=args.label,
        precision=args.precision,
        meter=meter,
        progress=on_progress,
    )
    interrupted = False
    try:
        with progress:
            try:
                result = bench.run()
            except KeyboardInterrupt:
                interrupted = True
                bench.result.errors.append("interrupted (Ctrl-C): results so far are kept")
                bench._summarize()
                result = bench.result
    finally:
        if meter is not None:
            meter.stop()
        server.close()
    if power_note:
        result.errors.append(power_note)
    doc = results_document([result], settings.to_dict(), host=host_for(meter))
    _print(doc, to_stderr=args.json == "-")  # `--json -`: stdout holds only the JSON
    if args.json:
        try:
            where = write_json_output(args.json, doc)
        except OSError as exc:
            return fail(f"--json {args.json}: {exc.strerror or exc}", 2)
        print(f"results written to {where}", file=sys.stderr)
    if interrupted:
        return 130
    if result.status == "partial":  # docs/design.md §3: an invalid run or a missing metric is a failed measurement
        print(
            f"precmon bench: partial — {result.extra.get('partial_reason') or 'not every planned metric'}"
            f"{' (results saved)' if args.json else ''}",
            file=sys.stderr,
        )
    return 0 if result.status == "ok" else 1


def _print(doc: dict, to_stderr: bool = False) -> None:
    """The comparison table; the variant's notes and errors are printed under it by the report."""
    from precmon.report.table import to_rich_table

    Console(stderr=to_stderr).print(to_rich_table(doc))
