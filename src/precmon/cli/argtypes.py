"""The types of the command line's flags: text to a value or one line saying what was expected.

argparse names the flag in front of the line (`argument --timeout: expected ...`). The plan
settings' types are generated from `precmon.core.settings`, whose one bounds check the sweep file
and the results loader apply too.
"""

from __future__ import annotations

import argparse
import math
import urllib.parse
from collections.abc import Callable
from typing import Any

from precmon.core import settings as plan_settings
from precmon.core.settings import MAX_SECONDS
from precmon.refresh import refresh_problem
from precmon.untrusted import redact_url, visible


def int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from exc
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return v

    return parse


def number(text: str, what: str) -> float:
    """A finite float (nan, inf and junk are usage errors: argparse names the flag)."""
    try:
        v = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from exc
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number of {what}, got {text!r}")
    return v


def seconds(text: str) -> float:
    v = number(text, "seconds")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    if v > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS:.0e} seconds, got {text!r}")
    return v


MIN_EXPORTER_INTERVAL_S = 0.1  # each interval polls every --url and rewrites (fsyncs) --textfile


def exporter_interval(text: str) -> float:
    """`--interval-s` of the exporter: 1e-9 s was valid and spun a core polling the servers."""
    v = seconds(text)
    if v < MIN_EXPORTER_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"expected at least {MIN_EXPORTER_INTERVAL_S:g} seconds, got {text!r}")
    return v


def refresh_seconds(text: str) -> float:
    v = number(text, "seconds")
    problem = refresh_problem(v)
    if problem:
        raise argparse.ArgumentTypeError(f"expected {problem}, got {text!r}")
    return v


def positive(what: str):
    def parse(text: str) -> float:
        v = number(text, what)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number of {what}, got {text!r}")
        return v

    return parse


def price(text: str) -> float:
    v = number(text, "money per kWh")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a price >= 0, got {text!r}")
    return v


def hours_per_day(text: str) -> float:
    v = number(text, "hours")
    if not 0 < v <= 24:
        raise argparse.ArgumentTypeError(f"expected hours per day in (0, 24], got {text!r}")
    return v


def port(text: str) -> int:
    v = int_at_least(0)(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {text!r}")
    return v


def url_arg(text: str) -> str:
    """A server base URL, checked before anything connects (`http://[bad` is a usage error, not a
    refused connection). Returned unchanged: credentials in it are used, only shown copies are
    redacted."""
    shown = redact_url(visible(text))
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT or https://HOST:PORT, got {shown!r}")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(f"a URL has no spaces or control characters: {shown!r}")
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL ({exc}): {shown!r}") from exc
    if not parts.hostname:
        raise argparse.ArgumentTypeError(f"no host in {shown!r}")
    if parts.path.rstrip("/").endswith("/v1"):  # an OpenAI client's base_url: every path would be /v1/v1/…
        raise argparse.ArgumentTypeError(f"the server's base URL, without /v1 (precmon adds the API paths): {shown!r}")
    return text


def setting_type(row: plan_settings.Setting) -> Callable[[str], Any]:
    """The argparse type of a plan setting: its text parsed, then the table's one bounds check."""

    def parse(text: str) -> Any:
        try:
            value = row.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        problem = row.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = row.kind  # argparse names the type in some messages
    return parse
