"""What `precmon report` and `precmon compare` do, as functions that return exit codes.

`precmon.cli` parses the arguments and calls these; they load and check the files, render, and
write or print. Exit codes follow docs/design.md §3: 0 success, 2 for a bad input file or option, with a
one-line message on stderr that names the file (or the flag).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

from precmon.measure.results import ResultsError, load_results
from precmon.report.export import FORMATS, SUFFIX, render
from precmon.report.table import BaselineError, build_table

EXIT_OK = 0
EXIT_USAGE = 2


def load_report_input(path: Path | str) -> dict[str, Any]:
    """Load a results file and check the parts the report reads.

    Raises:
        ResultsError: with a one-line message that starts with the file name.
    """
    doc = load_results(Path(path))
    variants = doc.get("variants")
    if not isinstance(variants, list):
        raise ResultsError(f"{path}: 'variants' must be a list")
    for i, v in enumerate(variants):
        if not isinstance(v, dict) or not isinstance(v.get("label"), str):
            raise ResultsError(f"{path}: variants[{i}] must be an object with a string 'label'")
        if v.get("metrics") is not None and not isinstance(v.get("metrics"), dict):
            raise ResultsError(f"{path}: variants[{i}].metrics must be an object")
        if v.get("runs") is not None and not isinstance(v.get("runs"), list):
            raise ResultsError(f"{path}: variants[{i}].runs must be a list")
    return doc


def _format_for(fmt: str | None, out: Path | str | None, allowed: tuple[str, ...]) -> str | None:
    """The explicit format, else the one `out`'s suffix implies, else None (terminal)."""
    if fmt is not None:
        if fmt not in allowed:
            raise ValueError(f"--format {fmt!r} is not one of {', '.join(allowed)}")
        return fmt
    if out is None:
        return None
    suffix = Path(out).suffix.lower()
    for name, suf in SUFFIX.items():
        if suffix == suf or (name == "md" and suffix == ".markdown") or (name == "html" and suffix == ".htm"):
            return name
    raise ValueError(f"--out {out}: cannot tell the format from the suffix; pass --format ({', '.join(allowed)})")


def _emit(text: str, out: Path | str | None, stdout: TextIO, stderr: TextIO, cmd: str) -> int:
    if out is None:
        stdout.write(text)
        return EXIT_OK
    path = Path(out)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        stderr.write(f"precmon {cmd}: cannot write {path}: {exc.strerror or exc}\n")
        return EXIT_USAGE
    stdout.write(f"wrote {path}\n")
    return EXIT_OK


def _check_options(hours_per_day: float | None, price_per_kwh: float | None, bandwidth_gbs: float | None) -> str | None:
    if hours_per_day is not None and not 0 < hours_per_day <= 24:
        return f"--hours-per-day {hours_per_day:g} must be more than 0 and at most 24"
    if price_per_kwh is not None and price_per_kwh < 0:
        return f"--price-per-kwh {price_per_kwh:g} must not be negative"
    if bandwidth_gbs is not None and bandwidth_gbs <= 0:
        return f"--bandwidth-gbs {bandwidth_gbs:g} must be positive"
    return None


def run_report(
    path: Path | str,
    fmt: str | None = None,
    out: Path | str | None = None,
    baseline: str | None = None,
    hours_per_day: float | None = None,
    price_per_kwh: float | None = None,
    bandwidth_gbs: float | None = None,
    stdout: TextIO | None = None,
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
        return EXIT_USAGE
    try:
        chosen = _format_for(fmt, out, FORMATS)
        doc = load_report_input(path)
        build_table(doc, baseline)  # validates the baseline label
    except (ResultsError, ValueError) as exc:
        prefix = f"{path}: " if isinstance(exc, BaselineError) else ""
        stderr.write(f"precmon report: {prefix}{exc}\n")
        return EXIT_USAGE
    options = {
        "baseline": baseline,
        "hours_per_day": hours_per_day,
        "price_per_kwh": price_per_kwh,
        "bandwidth_gbs": bandwidth_gbs,
    }
    if chosen is None:
        from rich.console import Console

        from precmon.report.terminal import print_report

        print_report(doc, console=Console(file=stdout), **options)
        return EXIT_OK
    text = render(doc, chosen, **options) if chosen in ("md", "html") else render(doc, chosen)
    return _emit(text, out, stdout, stderr, "report")


def run_compare(
    paths: list[Path | str],
    fmt: str | None = None,
    out: Path | str | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """`precmon compare A.json B.json [...] [--format md|csv|json|html] [--out FILE]`.

    Returns:
        0 on success, 2 when no file is given, a file is unreadable/invalid, or the format is unknown.
    """
    from precmon.report.compare import compare_table, render_compare

    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not paths:
        stderr.write("precmon compare: give at least one results file\n")
        return EXIT_USAGE
    try:
        chosen = _format_for(fmt, out, FORMATS)
        docs = [load_report_input(p) for p in paths]
    except (ResultsError, ValueError) as exc:
        stderr.write(f"precmon compare: {exc}\n")
        return EXIT_USAGE
    names = [str(p) for p in paths]
    if chosen is None:
        from rich.console import Console

        from precmon.report.terminal import rich_table

        Console(file=stdout).print(rich_table(compare_table(docs), title="precmon comparison"))
        return EXIT_OK
    return _emit(render_compare(docs, chosen, names), out, stdout, stderr, "compare")
