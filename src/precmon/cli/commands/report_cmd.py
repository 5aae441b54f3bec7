"""`precmon report` and `precmon compare`: load and validate the files, build the report once,
render it in the chosen format, print or write it.

Exit codes (precmon.exit_codes, docs/design.md §3): 0 success; 2 for a bad input file or option,
with one line on stderr that names the file and the field (or the flag). Nothing a results file
holds can raise past here: `report.load.load_document` turns every fault into a `DocumentError`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from precmon.core.metric_keys import KEY
from precmon.exit_codes import ExitCode
from precmon.file_args import input_clash
from precmon.measure.results import write_output, write_stream
from precmon.report import formats
from precmon.report.analysis.compare import GROUPS
from precmon.report.export import render_report
from precmon.report.importers.dispatch import load_any
from precmon.report.load import load_document
from precmon.report.model import DocumentError
from precmon.report.render.terminal import render_terminal, table_console
from precmon.report.sections import build_compare, build_report
from precmon.report.table import BaselineError
from precmon.untrusted import visible


def _format_for(fmt: str | None, out: Path | str | None) -> str | None:
    """The explicit format, else the one `out`'s suffix implies, else None (terminal)."""
    allowed = formats.names()
    if fmt is not None:
        if fmt not in allowed:
            raise ValueError(f"--format {fmt!r} is not one of {', '.join(allowed)}")
        return fmt
    if out is None:
        return None
    implied = formats.from_suffix(out)
    if implied is None:
        raise ValueError(f"--out {out}: cannot tell the format from the suffix; pass --format ({', '.join(allowed)})")
    return implied


def _to_stdout(write: Callable[[], object], stdout: TextIO, stderr: TextIO, cmd: str) -> int:
    """Run `write` (it prints to stdout); a stdout that cannot take it (`> /dev/full`, a full disk)
    is one line and exit 2, as an `--out` that cannot be written is. A closed pipe (`| head`) is
    not an error of ours: it propagates as before."""
    try:
        write()
        stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        stderr.write(f"precmon {cmd}: cannot write stdout: {exc.strerror or exc}\n")
        return ExitCode.USAGE
    return ExitCode.OK


def _emit(text: str, out: Path | str | None, stdout: TextIO, stderr: TextIO, cmd: str) -> int:
    if out is None:  # data: the same bytes in every locale
        return _to_stdout(lambda: write_stream(stdout, text), stdout, stderr, cmd)
    path = Path(out)
    try:  # a link (/dev/stdout) or a device is written through, never replaced by a regular file
        write_output(path, text)
    except OSError as exc:  # no stray temporary file next to the target (write_output's promise)
        stderr.write(f"precmon {cmd}: cannot write {visible(str(path))}: {exc.strerror or exc}\n")
        return ExitCode.USAGE
    stdout.write(f"wrote {visible(str(path))}\n")
    return ExitCode.OK


def _overwrites(out: Path | str | None, inputs: list[Path | str], stderr: TextIO, cmd: str) -> bool:
    """An export never replaces what it was made from (docs/design.md §9): say so, and True."""
    clash = input_clash(out, [("", p) for p in inputs]) if out is not None else None
    if clash:
        stderr.write(f"precmon {cmd}: --out {visible(str(out))} {visible(clash)}: an export never writes over it\n")
    return clash is not None


def _check_options(hours_per_day: float | None, price_per_kwh: float | None, bandwidth_gbs: float | None) -> str | None:
    if hours_per_day is not None and not 0 < hours_per_day <= 24:
        return f"--hours-per-day {hours_per_day:g} must be more than 0 and at most 24"
    if price_per_kwh is not None and not 0 <= price_per_kwh < float("inf"):
        return f"--price-per-kwh {price_per_kwh:g} must be a finite number, not negative"
    if bandwidth_gbs is not None and not 0 < bandwidth_gbs < float("inf"):
        return f"--bandwidth-gbs {bandwidth_gbs:g} must be a finite positive number"
    return None


def report_file(
    path: Path | str,
    fmt: str | None = None,
    out: Path | str | None = None,
    baseline: str | None = None,
    hours_per_day: float | None = None,
    price_per_kwh: float | None = None,
    bandwidth_gbs: float | None = None,
    stdout: TextIO | None = None,
    max_kld: float | None = None,
    stderr: TextIO | None = None,
) -> int:
    """`precmon report RESULTS.json [--format md|csv|json|html] [--out FILE] ...`.

    Without `fmt` and `out` the report is printed for the terminal (Rich); with `out` and no
    `fmt` the format follows the suffix; with `fmt` and no `out` the export goes to stdout.

    Returns:
        0 on success, 2 for an unreadable/invalid file, an unknown format or baseline, a bad option.
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    problem = _check_options(hours_per_day, price_per_kwh, bandwidth_gbs)
    if problem:
        stderr.write(f"precmon report: {problem}\n")
        return ExitCode.USAGE
    if _overwrites(out, [path], stderr, "report"):
        return ExitCode.USAGE
    try:
        chosen = _format_for(fmt, out)
        doc = load_document(path)
        report = build_report(doc, baseline, hours_per_day, price_per_kwh, bandwidth_gbs, max_kld)
    except (DocumentError, ValueError) as exc:
        prefix = f"{visible(str(path))}: " if isinstance(exc, BaselineError) else ""
        stderr.write(f"precmon report: {prefix}{visible(str(exc))}\n")
        return ExitCode.USAGE
    if max_kld is not None and not any(v.metrics.get(KEY.quality_kld_mean) is not None for v in doc.variants):
        stderr.write(  # a flag that cannot apply says so
            f"precmon report: --max-kld {max_kld:g}: {visible(str(path))} has no quality scores (KL divergence), "
            "so it judges nothing here\n"
        )
    if chosen is None:
        return _to_stdout(lambda: table_console(file=stdout).print(render_terminal(report)), stdout, stderr, "report")
    return _emit(render_report(report, chosen), out, stdout, stderr, "report")


def compare_files(
    paths: list[Path | str],
    fmt: str | None = None,
    out: Path | str | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    group: str = "file",
) -> int:
    """`precmon compare A.json B.json [...] [--format ...] [--out FILE] [--group file|precision]`.

    Each file is a precmon results file, a llama-bench `-o json` file or a llama-benchy JSON
    report (`report.importers.dispatch.load_any` tells them apart by shape).

    Returns:
        0 on success, 2 when no file is given, a file is unreadable/invalid, or the format is unknown.
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not paths:
        stderr.write("precmon compare: give at least one results file\n")
        return ExitCode.USAGE
    if group not in GROUPS:
        stderr.write(f"precmon compare: --group {visible(str(group))!r} is not one of {', '.join(GROUPS)}\n")
        return ExitCode.USAGE
    if _overwrites(out, paths, stderr, "compare"):
        return ExitCode.USAGE
    try:
        chosen = _format_for(fmt, out)
        docs = [load_any(p) for p in paths]  # llama-bench and llama-benchy JSON files become columns
    except (DocumentError, ValueError) as exc:
        stderr.write(f"precmon compare: {visible(str(exc))}\n")
        return ExitCode.USAGE
    report = build_compare(docs, [str(p) for p in paths], group)
    if chosen is None:
        return _to_stdout(lambda: table_console(file=stdout).print(render_terminal(report)), stdout, stderr, "compare")
    return _emit(render_report(report, chosen), out, stdout, stderr, "compare")


def _fmt(value: str | None) -> str | None:
    return None if value in (None, formats.TERMINAL) else value


def run_report(args: argparse.Namespace) -> int:
    return report_file(
        args.results,
        fmt=_fmt(args.format),
        out=args.out,
        baseline=args.baseline,
        hours_per_day=args.hours_per_day,
        price_per_kwh=args.price_per_kwh,
        bandwidth_gbs=args.bandwidth_gbs,
        max_kld=getattr(args, "max_kld", None),
    )


def run_compare(args: argparse.Namespace) -> int:
    return compare_files(args.results, fmt=_fmt(args.format), out=args.out, group=args.group)
