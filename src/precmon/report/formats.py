"""The output formats of `precmon report` and `precmon compare`, listed once.

The parser's `--format` choices, the suffix an `--out FILE` implies and the exports' file names
all read `FORMATS`; the renderers that produce each format are `precmon.report.export.RENDERERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Format:
    """One output format: its `--format` name, file suffixes (the first is written) and what it is."""

    name: str
    suffixes: tuple[str, ...]
    description: str
    #: written by `export.export_all` (a sweep's and the TUI's exports); a paste-ready extract is not
    exported: bool = True


FORMATS: tuple[Format, ...] = (
    Format("json", (".json",), "the results document unchanged (docs/design.md §5)"),
    Format("csv", (".csv",), "long format: one row per variant, metric and size"),
    Format("md", (".md", ".markdown"), "the whole report as GitHub-flavoured Markdown"),
    Format("html", (".html", ".htm"), "the whole report as one standalone HTML page"),
    # its ".md" suffix is md's first: `--out x.md` stays the whole report; this one needs --format
    Format("llama-bench", (".llama-bench.md",), "llama-bench's Markdown table (pp/tg t/s), to post", exported=False),
)
#: `--format table`: the report for the terminal (the default without --out).
TERMINAL = "table"


def names() -> tuple[str, ...]:
    """("json", "csv", "md", "html", "llama-bench"): the file formats, in export order."""
    return tuple(f.name for f in FORMATS)


def exported() -> tuple[str, ...]:
    """("json", "csv", "md", "html"): the formats `export_all` writes by default."""
    return tuple(f.name for f in FORMATS if f.exported)


def choices() -> list[str]:
    """What `--format` accepts: every file format, then the terminal table."""
    return [*names(), TERMINAL]


def suffix(name: str) -> str:
    """The suffix a file in format `name` is written with (".md" for "md")."""
    return next(f.suffixes[0] for f in FORMATS if f.name == name)


def from_suffix(path: Path | str) -> str | None:
    """The format `path`'s suffix implies ("report.htm" → "html"), None when it implies none."""
    low = Path(path).suffix.lower()
    return next((f.name for f in FORMATS if low in f.suffixes), None)


#: `precmon compare --group`: columns in file order, or precision-major (report/analysis/fleet.py)
COMPARE_GROUPS: tuple[str, ...] = ("file", "precision")
