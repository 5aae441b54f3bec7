"""What a number in a results record may be, decided once.

Two kinds of checks live here, because both answer "is this value possible?":

- `finite_or_none` / `strict_json`: JSON has no NaN or Infinity (docs/design.md §5 is strict JSON),
  so a non-finite float becomes `null` and the place it was is named, never written bare.
- `impossible_derived`: a metric derived from a server's numbers (prefill ms/token from its
  `prompt_tokens`, decode tok/s from its `completion_tokens`) that is negative or not finite is
  not a measurement; the run becomes invalid with the reason instead of entering a median.
- `check_record`: a record read back from disk (a results file, a journal line) has the types the
  dataclasses need; a wrong one is a one-line error naming the field, never a TypeError later.
"""

from __future__ import annotations

import math
from typing import Any

from precmon.core import registry
from precmon.core import settings as plan_settings

# Run fields by kind (the names of `Run`'s dataclass fields).
RUN_INT_FIELDS = ("prompt_tokens", "output_tokens", "cached_tokens", "target_prompt_tokens", "repeat", "depth_tokens")
RUN_FLOAT_FIELDS = (
    "ttft_s",
    "decode_tok_s",
    "prefill_ms_per_token",
    "itl_ms_p50",
    "itl_ms_p99",
    "power_w",
    "energy_j",
)
# Derived from a server's numbers and the client's clock: each must be a finite number >= 0.
DERIVED_FIELDS = ("ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99")
VARIANT_STATUSES = ("ok", "partial", "failed")


class RecordError(ValueError):
    """A stored record has a field of the wrong type; str() is one line naming the field."""


def is_number(x: Any) -> bool:
    """An int or float that is not a bool (JSON numbers; `True` is not a count)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite_or_none(x: Any) -> Any:
    """`x`, or None when it is a float that JSON cannot hold (NaN, ±Infinity)."""
    return None if isinstance(x, float) and not math.isfinite(x) else x


def positive_finite(x: Any) -> float | None:
    """`x` as a float when it is a finite number > 0 (a rate a server reports), else None."""
    if is_number(x) and math.isfinite(x) and x > 0:
        return float(x)
    return None


def strict_json(obj: Any, path: str = "", notes: list[str] | None = None) -> Any:
    """A copy of `obj` that `json.dumps(allow_nan=False)` accepts: non-finite floats become None.

    Each replacement is named in `notes` ("variants[0].runs[1].server_timings.prompt_per_second:
    nan written as null"), so the file says what was there instead of silently losing it.
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        if notes is not None:
            notes.append(f"{path or '(document)'}: {obj!r} written as null (JSON has no NaN/Infinity)")
        return None
    if isinstance(obj, dict):
        return {str(k): strict_json(v, f"{path}.{k}" if path else str(k), notes) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v, f"{path}[{i}]", notes) for i, v in enumerate(obj)]
    return obj


def impossible_derived(values: dict[str, Any]) -> str | None:
    """Why derived metrics are impossible (negative or non-finite), or None when all are possible."""
    bad = [
        f"{k} {v!r}"
        for k in DERIVED_FIELDS
        if (v := values.get(k)) is not None and (not is_number(v) or not math.isfinite(v) or v < 0)
    ]
    return f"impossible value from the server's numbers: {', '.join(bad)}" if bad else None


#: Largest magnitude a measured number may have (no tok/s, W, J, GB or token count reaches it).
MAX_VALUE = 1e12


def _out_of_range(v: Any) -> bool:
    """A number that no measurement gives: negative, non-finite or beyond MAX_VALUE."""
    return is_number(v) and not 0 <= v <= MAX_VALUE


def _type_name(x: Any) -> str:
    return f"{type(x).__name__} {x!r}"[:80]


def check_run_dict(d: Any, where: str) -> None:
    """Raise RecordError unless `d` has the shape `Run.from_dict` needs."""
    if not isinstance(d, dict):
        raise RecordError(f"{where}: expected an object, got {_type_name(d)}")
    if not isinstance(d.get("phase"), str):
        raise RecordError(f"{where}.phase: expected a string, got {_type_name(d.get('phase'))}")
    for k in RUN_INT_FIELDS:
        v = d.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise RecordError(f"{where}.{k}: expected an integer or null, got {_type_name(v)}")
    for k in RUN_FLOAT_FIELDS:
        v = d.get(k)
        if v is not None and not is_number(v):
            raise RecordError(f"{where}.{k}: expected a number or null, got {_type_name(v)}")
    if d.get("ok", True) is True:  # a failed run holds what the server said; a valid one was measured
        for k in (*RUN_INT_FIELDS, *RUN_FLOAT_FIELDS):
            if _out_of_range(d.get(k)):
                raise RecordError(f"{where}.{k}: expected a number from 0 to {MAX_VALUE:g}, got {_type_name(d[k])}")
    for k in ("server_timings", "extra"):
        if not isinstance(d.get(k, {}), dict):
            raise RecordError(f"{where}.{k}: expected an object, got {_type_name(d.get(k))}")
    if not isinstance(d.get("ok", True), bool):
        raise RecordError(f"{where}.ok: expected true or false, got {_type_name(d.get('ok'))}")
    if not isinstance(d.get("reason"), (str, type(None))):
        raise RecordError(f"{where}.reason: expected a string or null, got {_type_name(d.get('reason'))}")


def check_variant_dict(d: Any, where: str) -> None:
    """Raise RecordError unless `d` has the shape `VariantResult.from_dict` needs (runs included)."""
    if not isinstance(d, dict):
        raise RecordError(f"{where}: expected an object, got {_type_name(d)}")
    if not isinstance(d.get("label"), str):
        raise RecordError(f"{where}.label: expected a string, got {_type_name(d.get('label'))}")
    for k in ("precision", "model"):
        if not isinstance(d.get(k), (str, type(None))):
            raise RecordError(f"{where}.{k}: expected a string or null, got {_type_name(d.get(k))}")
    for k in ("server", "metrics"):
        if not isinstance(d.get(k) or {}, dict):
            raise RecordError(f"{where}.{k}: expected an object, got {_type_name(d.get(k))}")
    shapes = {m.metrics_key: m.shape for m in registry.metrics()}  # nested: checked by the report loader
    for k, v in (d.get("metrics") or {}).items():
        shape = shapes.get(k) if isinstance(k, str) else None
        if shape == "sized":
            if v is not None and not isinstance(v, dict):
                raise RecordError(f"{where}.metrics.{k}: expected an object or null, got {_type_name(v)}")
            for size, x in (v or {}).items():
                if x is not None and (not is_number(x) or _out_of_range(x)):
                    raise RecordError(
                        f"{where}.metrics.{k}.{size}: expected a number from 0 to {MAX_VALUE:g} or null, "
                        f"got {_type_name(x)}"
                    )
        elif shape == "scalar" and v is not None and (not is_number(v) or _out_of_range(v)):
            raise RecordError(
                f"{where}.metrics.{k}: expected a number from 0 to {MAX_VALUE:g} or null, got {_type_name(v)}"
            )
    status = d.get("status", "ok")
    if status not in VARIANT_STATUSES:
        raise RecordError(f"{where}.status: expected one of {', '.join(VARIANT_STATUSES)}, got {_type_name(status)}")
    errors = d.get("errors") or []
    if not isinstance(errors, list) or any(not isinstance(e, str) for e in errors):
        raise RecordError(f"{where}.errors: expected a list of strings, got {_type_name(errors)}")
    runs = d.get("runs") or []
    if not isinstance(runs, list):
        raise RecordError(f"{where}.runs: expected a list, got {_type_name(runs)}")
    for i, r in enumerate(runs):
        check_run_dict(r, f"{where}.runs[{i}]")


# ---- settings a user gives (sweep file, command line): the bounds are the plan-settings table's
MAX_SETTING_TOKENS = plan_settings.MAX_TOKENS
MAX_STREAMS = plan_settings.MAX_STREAMS
MAX_REPEATS = plan_settings.MAX_REPEATS
MAX_SECONDS = plan_settings.MAX_SECONDS


def setting_problem(key: str, value: Any) -> str | None:
    """Why a bench/sweep setting's value is impossible, in words, or None (type checks are the
    caller's): `precmon.core.settings`, the one check every front end applies."""
    return plan_settings.value_problem(key, value)
