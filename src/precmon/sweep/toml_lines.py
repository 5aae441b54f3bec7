"""Where a key of a sweep file is: tomllib gives no positions, so `Locator` maps (table, index,
key) back to line numbers by reading the text once, for errors that name the line."""

from __future__ import annotations

import re


class Locator:
    """Finds the line of `key` inside `[table]` or the n-th `[[table]]`."""

    _header = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*\]\]?")
    _key = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str, int, str], int] = {}
        self.headers: dict[tuple[str, int], int] = {}
        table, index = "", 0
        counts: dict[str, int] = {}
        for n, line in enumerate(text.splitlines(), start=1):
            h = self._header.match(line)
            if h:
                table = h.group(2)
                if h.group(1) == "[[":
                    counts[table] = counts.get(table, -1) + 1
                    index = counts[table]
                else:
                    index = 0
                self.headers[(table, index)] = n
                continue
            k = self._key.match(line)
            if k:
                self.lines.setdefault((table, index, k.group(1).strip('"')), n)

    def line(self, table: str, index: int, key: str | None) -> int | None:
        if key is not None and (table, index, key) in self.lines:
            return self.lines[(table, index, key)]
        return self.headers.get((table, index))
