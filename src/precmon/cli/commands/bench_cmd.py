"""`precmon bench`: measure one running server headless, print the table.

A bench is a sweep of one variant (`precmon.api.measure`): every run is journaled in its results
folder (`--out`, else the cache's bench/<time>) the moment it lands and results.json is written
before anything is printed; `--json FILE` gets a copy, as `sweep --json` does. The flags and the
quality inputs are checked first, so a bad one costs nothing. Every string printed went through
`precmon.untrusted`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon import api
from precmon.cli import preflight_out, signals
from precmon.cli.common import UsageError, api_key, host_for, open_meter, power_from, settings_from_args
from precmon.cli.output import fail, say
from precmon.cli.parser import url_arg
from precmon.cli.results_out import copy_results, show_table
from precmon.core import settings as plan_settings
from precmon.core.schema import VariantResult
from precmon.exit_codes import ExitCode
from precmon.file_args import input_clash
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, text_sha256
from precmon.measure.quality.settings import QualitySettings, QualityTextError, with_rows
from precmon.measure.results import output_problem
from precmon.sweep import folder_lock
from precmon.sweep.events import Progress as ProgressEvent
from precmon.sweep.events import SweepEvent
from precmon.sweep.launched import earlier_sweep
from precmon.sweep.quality_step import QualityJob
from precmon.sweep.store import FolderHasResults, out_dir_problem
from precmon.untrusted import markup, redact


def run(args: argparse.Namespace) -> int:
    inputs = [("--quality-ref", args.quality_ref), ("--quality-text", args.quality_text)]
    if args.json and (problem := output_problem(args.json) or input_clash(args.json, inputs)):
        return fail(f"--json {args.json}: {problem}", ExitCode.USAGE)
    try:  # every input first: a bad one is found now, not after minutes of measuring
        settings = settings_from_args(args)
        url_arg(str(args.url))
        api_key(args)
        quality = _quality_inputs(args)
    except (UsageError, argparse.ArgumentTypeError) as exc:
        return fail(str(exc) if isinstance(exc, UsageError) else f"--url: {exc}", ExitCode.USAGE)
    out = Path(args.out) if args.out else api.default_bench_dir()
    if problem := out_dir_problem(out):
        return fail(f"--out {out}: {problem}", ExitCode.USAGE)
    if busy := folder_lock.holder(out):  # one measurement per results folder
        return fail(f"--out {busy}", ExitCode.USAGE)
    if earlier := earlier_sweep(out, say):
        return fail(f"--out {out}: {earlier}: choose another --out", ExitCode.USAGE)
    preflight, code = preflight_out.checked([args.url], args.strict)
    if code is not None:
        return code
    try:
        meter, power_note = open_meter(not args.no_power, power_from(args))
    except UsageError as exc:
        return fail(str(exc), ExitCode.USAGE)
    progress, on_event = _progress_bar()
    ended: api.Ended | None = None
    try:
        with progress:  # the runner records a Ctrl-C itself (core/stops.py), wherever it lands
            ended = api.measure(
                args.url,
                settings=settings,
                out=out,
                kind=args.server,
                model=args.model,
                label=args.label,
                precision=args.precision,
                api_key_env=args.api_key_env,
                report=plan_settings.report_values(vars(args)),
                quality=_quality_job(quality),
                notes=[power_note] if power_note else [],
                meter=meter,
                host=host_for(meter),
                on_event=on_event,
                preflight=preflight,
            )
    except (folder_lock.FolderBusy, FolderHasResults) as exc:  # since the checks above: nothing was measured
        in_use = isinstance(exc, folder_lock.FolderBusy)
        return fail(f"--out {exc}" if in_use else f"--out {out}: {exc}", ExitCode.USAGE)
    except KeyboardInterrupt:  # in the progress bar's own drawing, after the results were written
        if ended is None:
            raise
    finally:
        if meter is not None:
            meter.stop()
    return _finish(args, ended)


def _finish(args: argparse.Namespace, ended: api.Ended) -> int:
    """The `--json` copy, the table, the lines that say where and what, and the exit code."""
    result = ended.doc.variants[0] if ended.doc.variants else None
    copied = None
    if args.json:
        with signals.holding():
            copied = copy_results(ended.results_path, args.json)
    if result is None or not ended.reached:
        if ended.interrupted:  # before the server answered: nothing measured; cli says it, exit 130
            raise KeyboardInterrupt
        return fail(result.errors[0] if result and result.errors else "the server did not answer", ExitCode.FAILED)
    show_table(ended.doc, to_stderr=args.json == "-", pick=False)  # `--json -`: stdout holds only the JSON
    say(f"results: {ended.results_path} (journal: {ended.journal_path})")
    if copied:
        say(f"precmon: {copied}")
    elif args.json and args.json != "-":
        say(f"results written to {args.json}")
    if ended.interrupted:
        return ExitCode.INTERRUPTED
    if copied or ended.rescued_to is not None:
        return ExitCode.FAILED
    if result.status == "partial":  # docs/design.md §3: an invalid run or a missing metric is a failed measurement
        say(f"precmon bench: partial — {result.partial_reason or 'not every planned metric'} (results saved)")
    return ExitCode.OK if result.status == "ok" else ExitCode.FAILED


def _quality_inputs(args: argparse.Namespace) -> tuple[QualitySettings, Reference | None] | None:
    """(settings, reference) when --quality or --quality-ref asks for scoring, else None.

    Raises:
        UsageError: the text or the reference file is unusable (one line naming it).
    """
    given = vars(args)
    if not any(given.get(row.dest) for row in plan_settings.QUALITY):
        return None  # any quality flag turns it on
    try:
        qs = with_rows(QualitySettings(), given)
    except QualityTextError as exc:
        raise UsageError(f"--quality-text {exc}") from None
    reference = None
    if args.quality_ref:
        try:
            reference = load_reference(Path(args.quality_ref), qs.positions)
        except QualityRefError as exc:
            raise UsageError(f"--quality-ref: {exc}") from None
        # else found only after the whole plan; a llama-perplexity base file holds ids, not text:
        # the server's ids of the text are compared when it is scored
        if reference.text_sha256 not in (None, text_sha256(qs.text)):
            raise UsageError(
                f"--quality-ref: {args.quality_ref}: made from the text {reference.text!r}, not this one "
                f"({qs.text_name}); pass that text with --quality-text"
            )
    return qs, reference


def _quality_job(quality: tuple[QualitySettings, Reference | None] | None) -> QualityJob | None:
    """Quality after the plan; without a reference this server is the baseline and its
    distributions go into the results as `quality_reference`."""
    if quality is None:
        return None
    qs, reference = quality

    def keep(ref: Reference, result: VariantResult) -> None:
        result.quality_reference = ref.to_dict()

    return QualityJob(qs, lambda: reference, keep, reference.label if reference is not None else None)


def _progress_bar(title: str = "bench") -> tuple[Progress, Callable[[SweepEvent], None]]:
    """A transient bar on stderr and the event handler that moves it (the plan's steps, then
    quality's positions)."""
    progress = Progress(
        TextColumn(f"[bold]{title}[/]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("starting", total=1)

    def on_event(event: SweepEvent) -> None:  # the text names the server's model
        if isinstance(event, ProgressEvent):
            text = markup(redact(event.text), limit=80)
            progress.update(task, completed=event.done, total=event.total, description=text)

    return progress, on_event
