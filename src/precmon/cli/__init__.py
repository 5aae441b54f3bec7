"""Command line: argument parsing and exit codes only; the work happens in the layers below.

Exit codes: 0 success; 1 measurement failed; 2 usage or input error; 130 interrupted (what was
measured is saved).
"""

from __future__ import annotations

import signal
import sys

from precmon.cli.parser import build_parser

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    # A dropped SSH session (SIGHUP) or a `kill` (SIGTERM) ends precmon like Ctrl-C does: launched
    # servers are stopped and what was measured is saved. The TUI installs its own handlers.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _interrupt)
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:  # no subcommand: the interactive TUI
        from precmon.cli.tui_cmd import run_tui

        handler = run_tui
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        print("\nprecmon: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
