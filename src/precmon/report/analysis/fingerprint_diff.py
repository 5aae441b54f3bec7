"""Where the environments of several results files differ (`precmon compare`).

Two files that disagree by 10% may be two machines, two drivers, a power cap or a CPU governor
apart. `fingerprint_diff` flattens each file's `host.fingerprint` (docs/design.md §5) and its
servers' build and flags (`variant.server` `version`, `flags`, `launch_flags`) into dotted keys
and keeps the keys whose values are not the same in every file: numbers by value (700 and 700.0
are one power limit), a server fact that differs between a file's variants by the set of its
values (the same builds measured in another order are the same), and text in full before it is cut
for the table. Values are the file's text, unescaped: each renderer escapes them for its medium.
The file's content is untrusted, so the walk is bounded in depth and size and accepts any JSON
shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from precmon.core.schema import ResultsDoc

ABSENT = "—"
MAX_DEPTH = 4
MAX_KEYS = 200  # per file: a fingerprint with more is not one precmon wrote
VALUE_CHARS = 120
MAX_SERVER_VALUES = 8  # per server fact and file: a file's variants' builds or model types
# Keys that say how the fingerprint was made, not what the machine is.
SKIP = {"fingerprint.id_from", "fingerprint.reasons"}


@dataclass(frozen=True)
class FingerprintDiff:
    """One differing key and each file's value (ABSENT where the file lacks it), in file order."""

    key: str
    values: tuple[str, ...]


def _text(value: Any) -> str:
    """A value as text, whole (cut only when shown): a number by its value, 700.0 as 700."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _shown(text: str) -> str:
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "\u2026"


def _walk(value: Any, key: str, out: dict[str, str], depth: int = 0) -> None:
    if len(out) >= MAX_KEYS or key in SKIP:
        return
    if isinstance(value, dict) and depth < MAX_DEPTH:
        for k, v in value.items():
            _walk(v, f"{key}.{k}", out, depth + 1)
    elif isinstance(value, list) and depth < MAX_DEPTH and all(isinstance(x, dict) for x in value):
        for i, item in enumerate(value):
            name = item.get("id") if isinstance(item.get("id"), str) else str(i)  # sources by id, GPUs by index
            _walk({k: v for k, v in item.items() if k != "id"}, f"{key}[{name}]", out, depth + 1)
    else:
        out[key] = _text(value)


def _servers(doc: ResultsDoc) -> dict[str, str]:
    """`server.<kind>.version`, `.flags.<name>`, `.launch_flags.<name>`: one value per server kind;
    variants of one file that differ are joined with " | "."""
    seen: dict[str, list[str]] = {}
    for v in doc.variants:
        srv = v.server
        kind = (srv.kind or "server")[:40]
        one: dict[str, str] = {}
        for part, value in (("version", srv.version), ("flags", srv.flags), ("launch_flags", srv.launch_flags)):
            if value is not None:
                _walk(value, f"server.{kind}.{part}", one, 2)
        for k, text in one.items():
            values = seen.setdefault(k, [])
            if text not in values and len(values) < MAX_SERVER_VALUES:
                values.append(text)
    return {k: " | ".join(sorted(vals)) for k, vals in seen.items()}  # a set: the variants' order is no difference


def flatten(doc: ResultsDoc) -> dict[str, str]:
    """A file's fingerprint and server facts as dotted key → text."""
    out: dict[str, str] = {}
    fp = doc.host.fingerprint
    if fp is not None:
        _walk(fp, "fingerprint", out)
    out.update(_servers(doc))
    return out


def fingerprint_diff(docs: list[ResultsDoc]) -> list[FingerprintDiff]:
    """The keys whose values differ between the files (all of them when only one file has a
    fingerprint); empty for fewer than two files, and when no file has a fingerprint (files
    written before it existed compare as they always did)."""
    if len(docs) < 2 or not any(isinstance(d.host.fingerprint, dict) for d in docs):
        return []
    flat = [flatten(d) for d in docs]
    keys = list(dict.fromkeys(k for f in flat for k in f))
    rows = []
    for key in keys:
        values = tuple(f.get(key, ABSENT) for f in flat)
        if len(set(values)) > 1:
            rows.append(FingerprintDiff(key, tuple(_shown(v) for v in values)))
    return rows
