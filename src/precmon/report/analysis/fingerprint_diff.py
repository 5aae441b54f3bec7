"""Where the environments of several results files differ (`precmon compare`).

Two files that disagree by 10% may be two machines, two drivers, a power cap or a CPU governor
apart. `fingerprint_diff` flattens each file's `host.fingerprint` (docs/design.md §5) and its
servers' build and flags (`variant.server` `version`, `flags`, `launch_flags`) into dotted keys
and keeps the keys whose values are not the same in every file. Values are the file's text,
unescaped: each renderer escapes them for its medium. The file's content is untrusted, so the
walk is bounded in depth and size and accepts any JSON shape.
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
# Keys that say how the fingerprint was made, not what the machine is.
SKIP = {"fingerprint.id_from", "fingerprint.reasons"}


@dataclass(frozen=True)
class FingerprintDiff:
    """One differing key and each file's value (ABSENT where the file lacks it), in file order."""

    key: str
    values: tuple[str, ...]


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            text = str(value)
    return text[:VALUE_CHARS]


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
            if text not in values and len(values) < 4:
                values.append(text)
    return {k: " | ".join(vals) for k, vals in seen.items()}


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
            rows.append(FingerprintDiff(key, values))
    return rows
