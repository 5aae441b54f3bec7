"""`precmon exporter`: this node's power, servers and results for Prometheus (docs/design.md §3).

Checks its arguments first (a bad `--listen`, an unset `--api-key-env`, a `--textfile` whose
folder is missing or that the first write cannot take: exit 2 with one line), then samples
power with its own `PowerSampler` at `--interval-s`, serves /metrics and/or rewrites
`--textfile` until Ctrl-C or SIGTERM (exit 130, via cli/signals.py and `main`'s handler).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from precmon.cli.common import MissingKeyError, api_key
from precmon.cli.output import fail, say
from precmon.exit_codes import ExitCode
from precmon.exporter.listen import DEFAULT_LISTEN, NO_AUTH_WARNING, is_loopback, parse_listen
from precmon.exporter.serve import Exporter
from precmon.power.sampler import PowerSampler


def start_http(exporter: Exporter, listen: str, flag: str = "--listen") -> tuple[str | None, int | None]:
    """Serve `exporter` on `listen`: (the address served, None) or (None, the exit code).

    Shared with `precmon watch --prometheus` (`flag` names the option in errors): the same
    checks and the same warning."""
    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        return None, fail(f"{flag}: {exc}", ExitCode.USAGE)
    try:
        bound = exporter.serve(host, port)
    except OSError as exc:
        return None, fail(f"{flag} {listen}: cannot listen there: {exc.strerror or exc}", ExitCode.USAGE)
    shown = f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"
    if not is_loopback(host):
        say(NO_AUTH_WARNING.format(addr=shown))
    return shown, None


def run(args: argparse.Namespace) -> int:
    try:
        key = api_key(args)
    except MissingKeyError as exc:
        return fail(str(exc), ExitCode.USAGE)
    textfile = Path(args.textfile) if args.textfile else None
    if textfile is not None and not textfile.parent.is_dir():
        return fail(f"--textfile {args.textfile}: folder {textfile.parent} does not exist", ExitCode.USAGE)
    if args.results and not Path(args.results).is_dir():
        return fail(f"--results {args.results}: not a folder", ExitCode.USAGE)
    listen = args.listen or (None if textfile is not None else DEFAULT_LISTEN)
    if listen is not None:
        try:
            parse_listen(listen)  # before any source is opened
        except ValueError as exc:
            return fail(f"--listen: {exc}", ExitCode.USAGE)
    sampler = PowerSampler(rate_hz=1.0 / args.interval_s, extras_hz=1.0 / args.interval_s, history_s=60.0)
    servers = [(u, args.server, args.model, key) for u in args.url]
    exporter = Exporter(lambda: sampler, servers, args.results, args.interval_s, host=args.node)
    pace = MeasuredPace(sampler)
    exporter.on_fresh = pace.measured
    try:
        sampler.start()
        exporter.start()
        if listen is not None:
            shown, code = start_http(exporter, listen)
            if code is not None:
                return code
            say(f"precmon exporter: serving http://{shown}/metrics (Ctrl-C stops)")
        if textfile is not None:
            try:  # the first write proves the path takes a file: a folder, /sys, a read-only mount
                exporter.write_textfile(textfile)
            except OSError as exc:
                return fail(f"--textfile {args.textfile}: cannot write there: {exc.strerror or exc}", ExitCode.USAGE)
            say(f"precmon exporter: writing {textfile} every {args.interval_s:g} s")
        while True:
            time.sleep(args.interval_s)
            pace.settle()
            if textfile is not None:
                _write(exporter, textfile)
    finally:
        exporter.stop()
        sampler.stop()


class MeasuredPace:
    """While another machine measures this node (its `--power-from` reads `/power?fresh=1` at each
    window edge), the sampler reads at the measuring rate, so a channel without an energy counter
    is integrated from as many samples as a measurement on this machine would take; `HOLD_S`
    after the last such read it goes back to `--interval-s`."""

    HOLD_S = 60.0
    RATE_HZ = 10.0  # PowerSampler's default: what a bench samples at

    def __init__(self, sampler: PowerSampler) -> None:
        self.sampler = sampler
        self.idle = (sampler.rate_hz, sampler.extras_hz)
        self.until = 0.0

    def measured(self) -> None:
        self.until = time.monotonic() + self.HOLD_S
        if self.sampler.rate_hz < self.RATE_HZ:
            self.sampler.set_rates(self.RATE_HZ, self.idle[1])

    def settle(self) -> None:
        if time.monotonic() > self.until and (self.sampler.rate_hz, self.sampler.extras_hz) != self.idle:
            self.sampler.set_rates(*self.idle)


def _write(exporter: Exporter, textfile: Path) -> None:
    """One rewrite; a failure (disk full, folder gone) is one line and the next interval retries."""
    try:
        exporter.write_textfile(textfile)
    except OSError as exc:
        print(f"precmon exporter: cannot write {textfile}: {exc.strerror or exc}", file=sys.stderr, flush=True)
