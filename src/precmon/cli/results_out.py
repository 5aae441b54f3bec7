"""What `bench` and `sweep` do with results once they are on disk: the `--json` copy and the
table. Both come after the results store has written `results.json`, so neither can lose a run."""

from __future__ import annotations

from pathlib import Path

from precmon.cli.output import describe_error, say
from precmon.core.schema import ResultsDoc
from precmon.measure.results import write_output
from precmon.report.render.terminal import table_and_pick, table_console, to_rich_table


def copy_results(results: Path, dest: str) -> str | None:
    """results.json → --json (the same document; `-` is stdout, links are written through); the
    problem, if any."""
    if not results.exists():
        return f"--json {dest}: nothing to copy, no variant was measured ({results} was not written)"
    try:
        write_output(dest, results.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"--json {dest}: {getattr(exc, 'strerror', None) or exc} (the results are in {results})"
    return None


def show_table(doc: ResultsDoc, to_stderr: bool = False, pick: bool = True) -> None:
    """The comparison table, with the pick under it (as `precmon report`) when there is a choice.
    The results are on disk already: a table that cannot be drawn costs one line, never the exit
    code's meaning."""
    try:
        table_console(stderr=to_stderr).print(table_and_pick(doc) if pick else to_rich_table(doc))
    except Exception as exc:
        say(f"precmon: the table could not be shown: {describe_error(exc)}")
