"""`precmon report` and `precmon compare`: thin wrappers over precmon.report.cli_entry."""

from __future__ import annotations

import argparse

from precmon.report.cli_entry import run_compare as _compare
from precmon.report.cli_entry import run_report as _report


def _fmt(value: str | None) -> str | None:
    return None if value in (None, "table") else value


def run_report(args: argparse.Namespace) -> int:
    return _report(
        args.results,
        fmt=_fmt(args.format),
        out=args.out,
        baseline=args.baseline,
        hours_per_day=args.hours_per_day,
        price_per_kwh=args.price_per_kwh,
        bandwidth_gbs=args.bandwidth_gbs,
    )


def run_compare(args: argparse.Namespace) -> int:
    return _compare(args.results, fmt=_fmt(args.format), out=args.out)
