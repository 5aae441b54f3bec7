"""The results model to JSON and back, by the declarations (core/schema/model.py).

`to_json` writes a record's declared fields in declaration order — a null (or an empty object)
left out unless its spec says `always` — then the keys a newer file added (`more`). `from_json`
builds a record from a JSON object without checking it (precmon's own documents, already typed);
`load` checks first (core/schema/check.py: one line naming the field) and is the way a record
from a file or a journal line becomes typed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from precmon.core.registry import empty_metrics
from precmon.core.schema.check import Checker, RecordError, check_record
from precmon.core.schema.model import Run, VariantResult
from precmon.core.schema.spec import Field, table

T = TypeVar("T")


def to_json(record: Any) -> dict[str, Any]:
    """The record as a JSON object: declared fields in order, then `more`."""
    out: dict[str, Any] = {}
    for f in table(type(record)):
        value = getattr(record, f.name)
        if f.always or not _absent(value):
            out[f.name] = _encode(value)
    out.update(getattr(record, "more", {}))
    return out


def _absent(value: Any) -> bool:
    if value is None or (isinstance(value, dict) and not value):
        return True
    return dataclasses.is_dataclass(value) and not to_json(value)


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(value)
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def from_json(record: type[T], d: Mapping[str, Any]) -> T:
    """A record from a JSON object whose declared fields have their declared types (unchecked)."""
    fields = table(record)
    known = {f.name for f in fields}
    values = {f.name: _decode(f, d[f.name]) for f in fields if d.get(f.name) is not None}
    obj = record(**values)
    more = {k: v for k, v in d.items() if k not in known}
    if more:
        obj.more = more  # type: ignore[attr-defined]
    return obj


def _decode(f: Field, value: Any) -> Any:
    if f.record is not None and f.kind == "object" and isinstance(value, Mapping):
        return from_json(f.record, value)
    if f.record is not None and isinstance(value, list):
        return [from_json(f.record, v) if isinstance(v, Mapping) else v for v in value]
    if f.kind == "metrics" and isinstance(value, Mapping):
        return empty_metrics() | dict(value)  # unmeasured metrics read as null, as they are written
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


def check(record: type, d: Any, where: str, checker: Checker | None = None) -> None:
    """Raise the checker's error (RecordError by default) unless `d` is a valid `record`."""
    check_record(checker or Checker("", RecordError), record, d, where)


def load(record: type[T], d: Any, where: str, checker: Checker | None = None) -> T:
    """Check `d` as a `record` (one line naming the field on a fault), then build it."""
    check(record, d, where, checker)
    return from_json(record, d)


def run_from_json(d: Any, where: str = "run") -> Run:
    """A run read back (a journal line): RecordError, one line naming the field, if it is not one."""
    return load(Run, d, where)


def variant_from_json(d: Any, where: str = "variant") -> VariantResult:
    """A variant read back (results.json, a journal line), runs included."""
    return load(VariantResult, d, where)
