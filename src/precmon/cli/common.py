"""Helpers shared by the commands: server and settings from arguments, one-line errors."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from precmon.measure.bench import BenchSettings
from precmon.power.base import EnergyMeter
from precmon.power.sampler import PowerSampler
from precmon.servers.base import ServerError


def fail(msg: str, code: int) -> int:
    print(f"precmon: {msg}", file=sys.stderr)
    return code


def settings_from_args(args: argparse.Namespace) -> BenchSettings:
    s = BenchSettings.quick() if getattr(args, "quick", False) else BenchSettings()
    mapping = {
        "output_tokens": "output_tokens",
        "decode_prompt_tokens": "decode_prompt_tokens",
        "prefill_tokens": "prefill_tokens",
        "ttft_tokens": "ttft_tokens",
        "repeats": "repeats",
        "warmup": "warmup",
        "concurrency": "concurrency",
        "long_context_tokens": "long_context_tokens",
        "idle_s": "idle_s",
        "timeout": "timeout_s",
    }
    for arg, field in mapping.items():
        v = getattr(args, arg, None)
        if v is not None:
            setattr(s, field, v)
    return s


def api_key(args: argparse.Namespace) -> str | None:
    var = getattr(args, "api_key_env", None)
    if not var:
        return None
    key = os.environ.get(var)
    if key is None:
        raise ServerError(f"--api-key-env {var}: that environment variable is not set")
    return key


class UsageError(ValueError):
    """A flag's value is unusable; exit 2."""


def open_server(args: argparse.Namespace, timeout_s: float = 300.0) -> Any:
    from precmon.servers.detect import make_server

    if not str(args.url).startswith(("http://", "https://")):
        raise UsageError(f"--url {args.url}: expected http://HOST:PORT or https://HOST:PORT")

    return make_server(args.url, kind=args.server, api_key=api_key(args), timeout_s=timeout_s)


def open_meter(enabled: bool = True) -> tuple[PowerSampler | None, str | None]:
    """A started power sampler, or (None, why not)."""
    if not enabled:
        return None, "power sampling disabled (--no-power)"
    try:
        sampler = PowerSampler()
        sampler.start()
    except Exception as exc:  # a broken source must never stop a speed measurement
        return None, f"power sampling failed to start: {exc}"
    if not any(c.has_watts for c in sampler.channels()):
        sampler.stop()
        return None, "no power source with watts on this machine (see `precmon doctor`)"
    return sampler, None


def host_for(meter: EnergyMeter | None) -> dict[str, Any]:
    """`host` of the results file: GPUs (named by NVML) and the power sources measured."""
    from precmon.measure.results import host_from_meter

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
