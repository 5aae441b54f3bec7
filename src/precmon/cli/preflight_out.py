"""The preflight as the headless commands show it: one line per finding on stderr before anything
is measured, and `--strict`'s exit 2 (docs/design.md §4 "Preflight")."""

from __future__ import annotations

from collections.abc import Sequence

from precmon import api
from precmon.cli.output import fail, say
from precmon.core.schema import Preflight
from precmon.exit_codes import ExitCode


def show(preflight: Preflight) -> None:
    """The findings, one line each, and what happens to them; nothing on a box fit to measure."""
    if not preflight.findings:
        return
    n = len(preflight.findings)
    say(f"precmon: preflight: this box is not fit to measure ({n} finding{'' if n == 1 else 's'}):")
    for line in preflight.findings:
        say(f"  {line}")
    say("precmon: measuring anyway; every variant keeps these as warnings (--strict: stop here instead)")


def checked(urls: Sequence[str], strict: bool) -> tuple[Preflight, int | None]:
    """Check the box, show what it found; with `strict` and any finding, the exit code to return."""
    preflight = api.preflight(urls)
    if strict and preflight.findings:
        for line in preflight.findings:
            say(f"  {line}")
        return preflight, fail("--strict: not measured: the preflight found the lines above", ExitCode.USAGE)
    show(preflight)
    return preflight, None
