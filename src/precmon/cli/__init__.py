"""Command line: argument parsing and exit codes only; the work happens in the layers below.

Exit codes (`precmon.exit_codes.ExitCode`, docs/design.md §3): 0 success; 1 measurement failed;
2 usage or input error; 130 interrupted (what was measured is saved).
"""

from __future__ import annotations

import errno
import os
import sys

from precmon.cli import signals
from precmon.cli.output import describe_error, fail, fit_streams_to_locale
from precmon.cli.parser import build_parser
from precmon.exit_codes import ExitCode


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C, a dropped SSH session (SIGHUP) or a `kill` (SIGTERM) end precmon alike: launched
    # servers are stopped and what was measured is saved, and a second signal while saving is
    # held off (cli/signals.py). The TUI installs its own SIGTERM/SIGHUP handlers.
    fit_streams_to_locale()  # a terminal in any locale: stand-ins, never a UnicodeEncodeError
    with signals.installed():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # a bad flag: SystemExit(2) with argparse's line naming it
    handler = getattr(args, "handler", None)
    if handler is None:  # no subcommand: the interactive TUI
        from precmon.cli.commands.tui_cmd import run_tui

        handler = run_tui
    try:
        code = int(handler(args) or ExitCode.OK)
        sys.stdout.flush()  # here, not at exit: a stdout that cannot take it is our one-line error
        return code
    except KeyboardInterrupt:
        print("\nprecmon: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # `| head` closed the pipe: the reader has what it wanted
        _silence_stdout()
        return ExitCode.OK
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            return fail(f"internal error (please report it): {describe_error(exc)}", ExitCode.FAILED)
        # `> /dev/full`, a full disk under a redirect: what could not be written is output, not a bug
        _silence_stdout()
        return fail(f"cannot write the output: {exc.strerror or exc}", ExitCode.USAGE)
    except Exception as exc:  # a bug: one line that locates it, never a traceback
        return fail(f"internal error (please report it): {describe_error(exc)}", ExitCode.FAILED)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
