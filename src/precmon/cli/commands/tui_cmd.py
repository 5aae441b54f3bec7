"""`precmon` (no command), `precmon watch` and the TUI half of `precmon demo`.

Inputs are checked before Textual starts: a bad `--sweep` file exits 2 with the SpecError line,
a missing `--api-key-env` variable likewise, so no error ever hides behind an alternate screen.
Each command builds the app's one `TuiConfig` from its parsed arguments (`tui_config`).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from precmon.cli.common import api_key, power_from
from precmon.cli.output import fail
from precmon.core.settings import report_values
from precmon.core.stops import Cut
from precmon.exit_codes import ExitCode
from precmon.servers.base import ServerError
from precmon.sweep.spec import SpecError, SweepSpec, load_spec
from precmon.sweep.store import out_dir_problem
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig

JOIN_S = 1.0  # after the screen is gone, how long the worker threads get to end (they are daemons)


def _run(app: PrecmonApp, headless: bool = False) -> int:
    """Run the app; SIGHUP/SIGTERM (a dropped SSH session) stop any bench or sweep and exit, so
    launched servers are stopped and the journal keeps what was measured. On the way out it says
    where this session's results were saved. A crash of the app exits 1 (Textual has printed it),
    never 0, and so does a session whose sweep's --out failed (its results are in the rescue
    folder, as `precmon sweep --headless`). `headless` is for tests (no terminal)."""

    def ended(signum: int, frame: object) -> None:
        app.shutdown(Cut.INTERRUPTED)  # a measurement says it was interrupted, as `bench` and `sweep` do
        app.exit(ExitCode.INTERRUPTED)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, ended)
    try:
        result = app.run(headless=headless)
        code = app.return_code or int(result or 0)  # return_code 1: the app crashed
    except KeyboardInterrupt:
        app.shutdown(Cut.INTERRUPTED)
        code = ExitCode.INTERRUPTED
    app.shutdown()
    app.quitting.join(JOIN_S)  # bounded: a thread stuck on a stalled server is left to exit with us
    for line in app.exit_lines():
        print(line, file=sys.stderr)
    return app.exit_code(code)  # 1 when results went to the rescue folder, not --out


def _key_or_exit(args: argparse.Namespace) -> tuple[str | None, int | None]:
    try:
        return api_key(args), None
    except ServerError as exc:
        return None, fail(str(exc), ExitCode.USAGE)


def _load_spec(path: str | None) -> tuple[Any, int | None]:
    if not path:
        return None, None
    try:
        return load_spec(Path(path)), None
    except SpecError as exc:
        return None, fail(str(exc), ExitCode.USAGE)
    except OSError as exc:
        return None, fail(f"{path}: {exc.strerror or exc}", ExitCode.USAGE)


def out_problem_exit(out: str | None) -> int | None:
    """Exit 2 naming --out when it cannot hold results (checked before anything starts), else None."""
    if not out:
        return None
    problem = out_dir_problem(Path(out))
    return fail(f"--out {out}: {problem}", ExitCode.USAGE) if problem else None


def tui_config(args: argparse.Namespace, key: str | None, **given: Any) -> TuiConfig:
    """The TUI's options from the parsed arguments (the server flags, `--out`, `--refresh-s`), the
    API key read from `--api-key-env`, and what the command itself decides (`given`)."""
    out = getattr(args, "out", None)
    options: dict[str, Any] = {
        "url": args.url,
        "model": args.model,
        "server_kind": getattr(args, "server", "auto") or "auto",
        "api_key": key,
        "out_dir": Path(out) if out else None,
        "discover": not args.url,  # look on the usual local ports until a server answers
        "refresh_s": args.refresh_s,
        "power_from": tuple(power_from(args, getattr(given.get("sweep_spec"), "power_from", None) or [])),
    }
    return TuiConfig(**(options | given))


def run_tui(args: argparse.Namespace) -> int:
    """The interactive TUI: live power and server panels; b/s/e/w/?/q."""
    key, code = _key_or_exit(args)
    if code is not None:
        return code
    code = out_problem_exit(getattr(args, "out", None))
    if code is not None:
        return code
    spec, code = _load_spec(getattr(args, "sweep", None))
    if code is not None:
        return code
    # --max-kld (the settings table's report group): the pick's budget, kept in what it saves; a
    # sweep file names its own servers, so no look on the usual ports then
    report, discover = report_values(vars(args)), not args.url and spec is None
    return _run(PrecmonApp(tui_config(args, key, sweep_spec=spec, report=report, discover=discover)))


def run_watch(args: argparse.Namespace) -> int:
    """`precmon watch`: big live readouts; passive unless --drive."""
    key, code = _key_or_exit(args)
    if code is not None:
        return code
    code = out_problem_exit(getattr(args, "out", None))
    if code is not None:
        return code
    app = PrecmonApp(tui_config(args, key, watch=True, drive=bool(getattr(args, "drive", False))))
    listen = getattr(args, "prometheus", None)
    if not listen:
        return _run(app)
    return _watch_exported(app, args, listen, key)


def _watch_exported(app: PrecmonApp, args: argparse.Namespace, listen: str, key: str | None) -> int:
    """`watch --prometheus`: the exporter reads the TUI's own sampler (`power_worker.meter`, set
    once the TUI has opened it) and watches the same server; it stops when the TUI ends."""
    from precmon.cli.commands.exporter_cmd import start_http
    from precmon.exporter.serve import Exporter

    servers = [(args.url, getattr(args, "server", "auto") or "auto", args.model, key)] if args.url else []
    exporter = Exporter(lambda: app.power_worker.meter, servers).start()
    try:
        _shown, code = start_http(exporter, listen, "--prometheus")
        return code if code is not None else _run(app)
    finally:
        exporter.stop()


def run_demo_app(url: str, spec: Any, out_dir: Path | str | None) -> int:
    """Open the TUI sweeping `spec` (a SweepSpec or a path) against `url` at once (`precmon demo`).

    Args:
        url: the demo server's base URL (shown in the Server panel, polled for health/metrics).
        spec: the sweep to run: a `SweepSpec`, or the path of a sweep file.
        out_dir: where the sweep's journal, results.json and exports go.

    Returns:
        The app's exit code (0; 1 when --out failed and the results went to the rescue folder;
        130 after SIGTERM/SIGHUP/Ctrl-C).
    """
    out = Path(out_dir) if out_dir is not None else None
    return _run(PrecmonApp(TuiConfig(url=url, sweep_spec=spec, out_dir=out, auto_sweep=True)))


def run_sweep_app(spec: SweepSpec, out_dir: Path | str) -> int:
    """`precmon sweep SPEC.toml` in a terminal without --headless: the TUI, sweeping at once.

    `precmon sweep` decides when to run headless instead (--resume, no terminal)."""
    first_url = spec.variants[0].url if spec.variants else None
    config = TuiConfig(
        url=first_url, sweep_spec=spec, out_dir=Path(out_dir), auto_sweep=True, power_from=tuple(spec.power_from)
    )
    return _run(PrecmonApp(config))
