"""Labels a screen cannot tell apart (docs/design.md §6): `A`, `A ` and `A` with a zero-width
space passed as three variants, showed as one in every table and shared one log file name. A
sweep file's labels must differ as a reader sees them, and as file names."""

from __future__ import annotations

import unicodedata

from precmon.untrusted import file_part


def looks(label: str) -> str:
    """What a label looks like on a screen: compatibility forms folded (a full-width `Ａ` is `A`),
    invisible characters (zero-width space, joiners) dropped, spaces collapsed and trimmed."""
    s = unicodedata.normalize("NFKC", label)
    s = "".join(c for c in s if unicodedata.category(c) != "Cf")
    return " ".join(s.split())


def look_alike(label: str, labels: set[str]) -> str | None:
    """Why `label` cannot stand beside `labels`: it looks the same as one on a screen, or would
    share its file name (a launched server's log, its record under launched/)."""
    for other in sorted(labels):
        if looks(other) == looks(label):
            return f"label {label!r} looks the same as {other!r} (spaces or invisible characters): labels must differ"
        if file_part(other) == file_part(label):
            return f"label {label!r} and {other!r} would share the file name {file_part(label)!r} (logs/, launched/)"
    return None
