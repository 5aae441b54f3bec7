"""`precmon bench`: measure one running server headless, write the JSON, print the table.

Measured runs are the one thing that cannot be had again, so once measuring ends (finished,
Ctrl-C, or an error nobody foresaw) the results are written FIRST, with further signals held
off (`signals.holding`); only then comes anything that can fail on odd data: the table, the
summary lines. Every string printed went through `precmon.untrusted`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon.cli import signals
from precmon.cli.common import (
    ExitCode,
    UsageError,
    describe_error,
    fail,
    host_for,
    open_meter,
    open_server,
    say,
    settings_from_args,
)
from precmon.core import settings as plan_settings
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, text_sha256
from precmon.measure.quality.run import QualitySettings, QualityTextError, with_rows
from precmon.core.schema import VariantResult
from precmon.measure.results import host_info, output_problem, results_document, write_json_atomic, write_json_output
from precmon.report.model import own_document
from precmon.report.render.terminal import table_console, to_rich_table
from precmon.servers.base import ServerError
from precmon.sweep.events import Progress as ProgressEvent
from precmon.sweep.events import SweepEvent
from precmon.sweep.execute import Context, Job, Outcome, QualityJob, run_variant
from precmon.untrusted import markup, redact


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
    except UsageError as exc:
        return fail(str(exc), ExitCode.USAGE)
    if args.json:  # find out now, not after minutes of measuring
        problem = output_problem(args.json)
        if problem:
            return fail(f"--json {args.json}: {problem}", ExitCode.USAGE)
    try:  # the quality inputs too: a missing reference is found before the plan, not after
        quality = _quality_inputs(args)
    except UsageError as exc:
        return fail(str(exc), ExitCode.USAGE)
    try:
        server = open_server(args, timeout_s=settings.timeout_s)
    except UsageError as exc:  # before ServerError: an unset --api-key-env is both
        return fail(str(exc), ExitCode.USAGE)
    except ServerError as exc:
        return fail(str(exc), ExitCode.FAILED)
    meter, power_note = open_meter(not args.no_power)
    progress, on_event = _progress_bar()
    job = Job(
        settings,
        lambda: server,
        args.url,
        server.kind,
        model=args.model,
        label=args.label,
        precision=args.precision,
        quality=_quality_job(quality),
    )
    outcome: Outcome | None = None
    late = False  # a Ctrl-C after run_variant returned: kept, and exit 130
    try:
        with progress:  # run_variant records a Ctrl-C itself (core/stops.py), wherever it lands
            outcome = run_variant(job, Context(meter=meter, emit=on_event))
    except KeyboardInterrupt:  # in the progress bar's own drawing: nothing measured, or all of it
        if outcome is None:
            _stop_quietly(meter, server)
            raise
        late = True
    assert outcome is not None
    result = outcome.result
    if not outcome.reached:
        _stop_quietly(meter, server)
        if outcome.interrupted:  # before the server answered: nothing to save; cli says it, exit 130
            raise KeyboardInterrupt
        return fail(result.errors[0] if result.errors else "the server did not answer", ExitCode.FAILED)
    interrupted = outcome.interrupted or late
    with signals.holding() as held:  # the results first, with further signals held off
        _stop_quietly(meter, server)
        if power_note:
            result.errors.append(power_note)
        doc = _document(result, settings.to_dict() | plan_settings.report_values(vars(args)), meter)
        saved_to, save_problem = _save(args.json, doc)
    interrupted = interrupted or held.held > 0
    crashed = outcome.crashed
    _show(doc, to_stderr=args.json == "-")  # `--json -`: stdout holds only the JSON
    if save_problem:
        say(f"precmon: {save_problem}")
    elif saved_to:
        say(f"results written to {saved_to}")
    if interrupted:
        return ExitCode.INTERRUPTED
    if crashed or save_problem:
        return ExitCode.FAILED
    if result.status == "partial":  # docs/design.md §3: an invalid run or a missing metric is a failed measurement
        say(
            f"precmon bench: partial — {result.extra.get('partial_reason') or 'not every planned metric'}"
            f"{' (results saved)' if saved_to else ''}"
        )
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
            reference = load_reference(Path(args.quality_ref))
        except QualityRefError as exc:
            raise UsageError(f"--quality-ref: {exc}") from None
        if reference.text_sha256 != text_sha256(qs.text):  # else found only after the whole plan
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


def _stop_quietly(meter: Any, server: Any) -> None:
    for stop in (getattr(meter, "stop", None), server.close):
        if stop is None:
            continue
        try:
            stop()
        except Exception as exc:  # stopping must not cost the results
            say(f"precmon: while stopping: {describe_error(exc)}")


def _document(result: VariantResult, settings: dict[str, Any], meter: Any) -> dict[str, Any]:
    try:
        host = host_for(meter)
    except Exception as exc:
        result.errors.append(f"host information unavailable: {describe_error(exc)}")
        host = host_info()
    return results_document([result], settings, host=host)


def _save(json_path: str | None, doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """Write `doc` to --json: (where it went, problem). A value JSON cannot hold (NaN, an object a
    server's odd answer left behind) is written as null or text rather than losing the file; a
    write that fails after measuring goes to a fallback file in the temp folder, so the runs are
    never only on a screen."""
    if not json_path:
        return None, None
    why: object
    try:
        try:
            return write_json_output(json_path, doc), None  # `-` is stdout; links are written through
        except (TypeError, ValueError):
            return write_json_output(json_path, _json_safe(doc)), None
    except OSError as exc:
        why = exc.strerror or exc
    fallback = Path(tempfile.gettempdir()) / f"precmon-bench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    try:
        write_json_atomic(fallback, doc)
    except OSError as exc:
        return None, f"--json {json_path}: {why}; the fallback {fallback} failed too: {exc.strerror or exc}"
    return str(fallback), f"--json {json_path}: {why}; the results are in {fallback}"


def _json_safe(value: Any) -> Any:
    """`value` with what strict JSON cannot hold replaced: non-finite floats by None, other
    objects by their text."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _show(doc: dict[str, Any], to_stderr: bool = False) -> None:
    """The comparison table (the variant's notes and errors under it, by the report). Results are
    on disk already: a table that cannot be drawn costs one line, never the exit code's meaning."""
    try:
        table_console(stderr=to_stderr).print(to_rich_table(own_document(doc)))
    except Exception as exc:
        say(f"precmon: the table could not be shown: {describe_error(exc)}")
    sys.stdout.flush()
