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
from precmon.measure.bench import Bench
from precmon.measure.quality_ref import QualityRefError, Reference, load_reference, text_sha256
from precmon.measure.quality_run import QualitySettings, measure_quality, read_quality_text
from precmon.measure.results import (
    VariantResult,
    host_info,
    output_problem,
    results_document,
    write_json_atomic,
    write_json_output,
)
from precmon.report.model import own_document
from precmon.report.render.terminal import to_rich_table
from precmon.servers.base import ServerError
from precmon.untrusted import markup, redact, redact_url


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
    try:
        healthy = server.health()
    except ServerError as exc:
        server.close()
        return fail(str(exc), ExitCode.FAILED)
    if not healthy:
        server.close()
        return fail(
            f"{redact_url(args.url)}: the server answers but is not healthy (still loading a model?)", ExitCode.FAILED
        )
    meter, power_note = open_meter(not args.no_power)
    progress, on_progress = _progress_bar()
    bench = Bench(
        server,
        settings,
        model=args.model,
        label=args.label,
        precision=args.precision,
        meter=meter,
        progress=on_progress,
    )
    result, interrupted, crashed = bench.result, True, False  # unless _measure returns
    try:
        result, interrupted, crashed = _measure(bench, progress)
        if quality is not None and not (interrupted or crashed):
            try:
                _score_quality(bench, server, args, *quality)
            except KeyboardInterrupt:  # the speed results stand; saved below, then exit 130
                interrupted = True
                result.errors.append("interrupted (Ctrl-C) during quality scoring: the speed results are kept")
    finally:  # also when a signal lands between the plan's end and here: save, then exit 130
        with signals.holding() as held:
            if interrupted and not any("interrupted" in e for e in result.errors):
                result.errors.append("interrupted: results so far are kept")
            _stop_quietly(meter, server)
            if power_note:
                result.errors.append(power_note)
            doc = _document(result, settings.to_dict(), meter)
            saved_to, save_problem = _save(args.json, doc)
    interrupted = interrupted or held.held > 0
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
    if not any((args.quality, args.quality_ref, args.quality_text, args.quality_positions, args.quality_top_k)):
        return None  # any quality flag turns it on
    qs = QualitySettings()
    if args.quality_text:
        try:
            text = read_quality_text(Path(args.quality_text))
        except ValueError as exc:
            raise UsageError(f"--quality-text {args.quality_text}: {exc}") from None
        qs = QualitySettings(qs.positions, qs.top_k, text, Path(args.quality_text).name)
    qs = QualitySettings(args.quality_positions or qs.positions, args.quality_top_k or qs.top_k, qs.text, qs.text_name)
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


def _score_quality(
    bench: Bench, server: Any, args: argparse.Namespace, qs: QualitySettings, reference: Reference | None
) -> None:
    """Quality after the plan, with its own progress bar; without a reference this server is
    the baseline and its distributions go into the results as `quality_reference`."""
    result = bench.result
    if result.status == "failed":
        return
    progress, on_progress = _progress_bar("quality")
    with progress:
        outcome = measure_quality(
            server, qs, label=result.label, model=args.model, reference=reference, say=on_progress
        )
    outcome.apply(result)
    if outcome.reference is not None:
        result.extra["quality_reference"] = outcome.reference.to_dict()


def _progress_bar(title: str = "bench") -> tuple[Progress, Callable[[int, int, str], None]]:
    """A transient bar on stderr and the Bench callback that moves it."""
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

    def on_progress(done: int, total: int, text: str) -> None:  # text names the server's model
        progress.update(task, completed=done, total=total, description=markup(redact(text), limit=80))

    return progress, on_progress


def _measure(bench: Bench, progress: Progress) -> tuple[VariantResult, bool, bool]:
    """Run the plan: (result, interrupted, crashed). Never raises: an unexpected error ends the
    plan like a server error does, keeping the runs before it."""
    interrupted = crashed = False
    try:
        with progress:
            return bench.run(), False, False
    except KeyboardInterrupt:
        interrupted = True
        bench.result.errors.append("interrupted (Ctrl-C): results so far are kept")
    except Exception as exc:  # the last line of defence: what was measured is still saved
        crashed = True
        bench.result.errors.append(f"unexpected error while measuring: {describe_error(exc)}")
    with signals.holding():
        try:
            bench._summarize()
        except Exception as exc:
            crashed = True
            bench.result.status = "failed"
            bench.result.errors.append(f"unexpected error summarizing: {describe_error(exc)}")
    return bench.result, interrupted, crashed


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
        Console(stderr=to_stderr).print(to_rich_table(own_document(doc)))
    except Exception as exc:
        say(f"precmon: the table could not be shown: {describe_error(exc)}")
    sys.stdout.flush()
