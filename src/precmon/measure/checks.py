"""What a number in a results record may be, decided once.

Both kinds of checks live here, because both answer "is this value possible?":

- `finite_or_none` / `strict_json`: JSON has no NaN or Infinity (docs/design.md §5 is strict JSON),
  so a non-finite float becomes `null` and the place it was is named, never written bare.
- `impossible_derived`: a metric derived from a server's numbers (prefill ms/token from its
  `prompt_tokens`, decode tok/s from its `completion_tokens`) that is negative or not finite is
  not a measurement; the run becomes invalid with the reason instead of entering a median.
"""

from __future__ import annotations

import math
from typing import Any

from precmon.core import settings as plan_settings
from precmon.core.schema import DERIVED_FIELDS


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


# ---- settings a user gives (sweep file, command line): the bounds are the plan-settings table's
MAX_SETTING_TOKENS = plan_settings.MAX_TOKENS
MAX_STREAMS = plan_settings.MAX_STREAMS
MAX_REPEATS = plan_settings.MAX_REPEATS
MAX_SECONDS = plan_settings.MAX_SECONDS


def setting_problem(key: str, value: Any) -> str | None:
    """Why a bench/sweep setting's value is impossible, in words, or None (type checks are the
    caller's): `precmon.core.settings`, the one check every front end applies."""
    return plan_settings.value_problem(key, value)
