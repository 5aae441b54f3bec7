"""Helpers shared by the commands: server and settings from arguments, one-line errors."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from precmon.cli.parser import url_arg
from precmon.core import settings as plan_settings
from precmon.core.schema import Host
from precmon.core.settings import BenchSettings
from precmon.measure.results import host_from_meter
from precmon.power.base import EnergyMeter
from precmon.power.remote import open_nodes
from precmon.power.sampler import PowerSampler
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server


def settings_from_args(args: argparse.Namespace) -> BenchSettings:
    """The plan the flags ask for: the defaults (or `--quick`'s values), each flag given replacing
    its setting. argparse has checked the values already (`cli/argtypes.py setting_type`); a
    Namespace a caller built is checked here by the same rule of `precmon.core.settings`, so
    `--concurrency 100000000` is a UsageError naming the flag, never hours of opening streams.

    Raises:
        UsageError: `--flag: expected ..., got ...`.
    """
    s = BenchSettings.quick() if getattr(args, "quick", False) else BenchSettings()
    for row in plan_settings.PLAN:
        v = getattr(args, row.dest, None)
        if v is None:
            continue
        problem = row.problem(v)
        if problem:
            raise UsageError(f"{row.option}: {problem}")
        setattr(s, row.name, v)
    return s


class UsageError(ValueError):
    """A flag's value is unusable; exit 2."""


class MissingKeyError(ServerError, UsageError):
    """`--api-key-env VAR` names an unset variable: a usage error (exit 2), and a ServerError for
    the callers that catch a server-side problem around `api_key`."""


def api_key(args: argparse.Namespace) -> str | None:
    var = getattr(args, "api_key_env", None)
    if not var:
        return None
    key = os.environ.get(var)
    if key is None:
        raise MissingKeyError(f"--api-key-env {var}: that environment variable is not set")
    return key


def open_server(args: argparse.Namespace, timeout_s: float = 300.0) -> Any:
    try:  # parse_args has checked it already; a Namespace built by a caller may not have been
        url_arg(str(args.url))
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--url: {exc}") from exc
    return make_server(args.url, kind=args.server, api_key=api_key(args), timeout_s=timeout_s)


def open_meter(enabled: bool = True, power_from: Sequence[str] = ()) -> tuple[PowerSampler | None, str | None]:
    """A started power sampler, or (None, why not). `power_from`: other nodes' exporters
    (`--power-from`), read beside this machine's sources (`enabled`) or alone.

    Raises:
        UsageError: a node that does not answer, or answers with something that is not an
            exporter: one line naming the URL (a measurement would miss it in every window).
    """
    nodes = open_nodes(power_from) if power_from else []
    bad = [n.node.problem for n in nodes if n.node.problem]
    if bad:
        for n in nodes:
            n.close()
        raise UsageError("--power-from: " + "; ".join(bad))
    if not enabled and not nodes:
        return None, "power sampling disabled (--no-power)"
    try:
        sampler = PowerSampler(None if enabled else [], nodes=nodes)
        sampler.start()
    except Exception as exc:  # a broken source must never stop a speed measurement
        return None, f"power sampling failed to start: {exc}"
    if not any(c.has_watts for c in sampler.channels()):
        sampler.stop()
        return None, "no power source with watts on this machine (see `precmon doctor`)" + (
            " nor on the --power-from nodes" if nodes else ""
        )
    return sampler, None


def power_from(args: argparse.Namespace, *more: Sequence[str]) -> list[str]:
    """`--power-from` URLs, then a sweep file's `power_from`, each once."""
    return list(dict.fromkeys([*(getattr(args, "power_from", None) or []), *(u for m in more for u in m)]))


def host_for(meter: EnergyMeter | None) -> Host:
    """`host` of the results file: GPUs (named by NVML) and the power sources measured."""
    return host_from_meter(meter)


def sampler_stats(meter: PowerSampler | None, window_s: float) -> dict[str, Any] | None:
    """The sampling rate actually achieved over the last `window_s` seconds, per watts channel."""
    if meter is None or window_s <= 0:
        return None
    window_s = min(window_s, 120.0)
    achieved = {}
    for c in meter.channels():
        if c.has_watts:
            achieved[c.id] = round(len(meter.history(c.id, window_s)) / window_s, 2)
    return {
        "rate_hz_target": meter.rate_hz,
        "rate_hz_achieved": achieved,
        "window_s": round(window_s, 1),
    }
