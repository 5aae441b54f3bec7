"""Typed reads of untrusted server JSON: every field a server sends passes through here.

A server (or a proxy in front of it) may send any JSON shape: `choices: [null]`, counts as
strings or floats, `1e30`, `true`, NaN, a list where an object belongs, a bare string for a
whole body. Adapters never index a server's JSON directly; they ask these helpers, which give
the value in the type asked for or a defined fallback (None, `{}`, `[]`), never an exception.

Two strengths:
- `int_field`, `float_field`, `str_field`, `dict_field`, `list_field` are lenient: a missing or
  unusable value reads as absent (identity facts such as a context length are optional).
- `count_field` is strict, for the token counts a measurement divides by: a value that is
  present but impossible (negative, above `MAX_TOKENS`, fractional, NaN, a bool) raises
  `FieldError` naming the field, so the run becomes invalid with that reason instead of
  yielding a negative prefill or a rate of 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# No server processes a billion tokens in one request; a count above this is a broken server.
MAX_TOKENS = 1_000_000_000
MAX_INT = 2**63 - 1
STR_LIMIT_CHARS = 4096  # identity strings (model names, versions) beyond this are not names


class FieldError(ValueError):
    """A field is present but impossible; the message names it (`usage.prompt_tokens = -5: ...`)."""


def _get(obj: object, key: str) -> object:
    return obj.get(key) if isinstance(obj, Mapping) else None


def as_int(value: object, *, min: int = 0, max: int = MAX_INT) -> int | None:
    """`value` as an int in [min, max], or None (bools, fractions, NaN, out of range, junk)."""
    if value.__class__ is int:
        n = value
    elif isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        n = int(value)
    elif isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.lstrip("-").isdigit()) or len(text) > 20:
            return None
        n = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):  # int subclasses (IntEnum)
        n = int(value)
    else:
        return None
    assert isinstance(n, int)
    return n if min <= n <= max else None


def as_float(value: object, *, min: float = -math.inf, max: float = math.inf) -> float | None:
    """`value` as a finite float in [min, max], or None (bools, NaN, inf, junk)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:  # an int beyond float range
            return None
    elif isinstance(value, str) and len(value) <= 64:
        try:
            x = float(value)
        except ValueError:
            return None
    else:
        return None
    return x if math.isfinite(x) and min <= x <= max else None


def int_field(obj: object, key: str, *, min: int = 0, max: int = MAX_INT) -> int | None:
    """`obj[key]` as an int in [min, max]; None when `obj` is no object, or the value is unusable."""
    return as_int(_get(obj, key), min=min, max=max)


def float_field(obj: object, key: str, *, min: float = -math.inf, max: float = math.inf) -> float | None:
    """`obj[key]` as a finite float in [min, max], or None."""
    return as_float(_get(obj, key), min=min, max=max)


def str_field(obj: object, key: str, *, limit: int = STR_LIMIT_CHARS) -> str | None:
    """`obj[key]` when it is a non-empty string of at most `limit` characters, else None."""
    value = _get(obj, key)
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def dict_field(obj: object, key: str) -> dict[str, Any]:
    """`obj[key]` when it is an object, else `{}`."""
    value = _get(obj, key)
    return value if isinstance(value, dict) else {}


def list_field(obj: object, key: str) -> list[Any]:
    """`obj[key]` when it is a list, else `[]`."""
    value = _get(obj, key)
    return value if isinstance(value, list) else []


def dicts(items: object) -> list[dict[str, Any]]:
    """The object entries of a list (a `[null, 3, {...}]` from a server gives `[{...}]`)."""
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def as_dict(body: object) -> dict[str, Any]:
    """A whole response body that should be an object: `{}` when it is a list, string, number or null."""
    return body if isinstance(body, dict) else {}


def count_field(obj: object, key: str, *, where: str) -> int | None:
    """A token count: None when absent (or null); an int in 0..MAX_TOKENS; else `FieldError`.

    Args:
        obj: the object holding the count (`usage`, Ollama's final object, TGI's `details`).
        key: the field name.
        where: the object's name in messages (`"usage"` gives `usage.prompt_tokens = -5: ...`).
    """
    value = _get(obj, key)
    if value is None:
        return None
    n = as_int(value, max=MAX_TOKENS)
    if n is None:
        raise FieldError(f"{where}.{key} = {_show(value)}: not a token count (an integer 0..{MAX_TOKENS:.0e})")
    return n


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def token_ids(items: object) -> list[int] | None:
    """A tokenizer's answer as ids: ints, or objects with an int `id` (TGI); None if any is not."""
    if not isinstance(items, list):
        return None
    out: list[int] = []
    for t in items:
        n = as_int(t) if not isinstance(t, dict) else int_field(t, "id")
        if n is None or isinstance(t, str):
            return None
        out.append(n)
    return out
