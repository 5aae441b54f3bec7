"""Which reader a file passed to `precmon compare` needs, told by its shape.

A precmon results file (an object with `schema`) is validated by `report.load`; llama-bench's
`-o json` (a list of test objects) and llama-benchy's JSON report (an object with `benchmarks`)
go to their importers. A file of none of the three kinds, or an unreadable one, is one
`DocumentError` line naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from precmon.core.schema import ResultsDoc
from precmon.file_args import open_file_arg
from precmon.report.importers.llama_bench import from_llama_bench, is_llama_bench
from precmon.report.importers.llama_benchy import from_benchy, is_benchy
from precmon.report.load import read_json, validate
from precmon.report.model import DocumentError
from precmon.untrusted import visible

KINDS = "a precmon results file, a llama-bench -o json file or a llama-benchy JSON report"


def _first_line_is_a_test(path: Path | str) -> bool:
    """Whether the file's first line is one llama-bench test object (`-o jsonl` writes one a line)."""
    try:
        with open_file_arg(path) as f:
            first = json.loads(f.readline(2**20))
    except (OSError, ValueError, RecursionError):
        return False
    return is_llama_bench([first])


def load_any(path: Path | str) -> ResultsDoc:
    """A precmon results file, or a llama-bench / llama-benchy JSON file as one (see above).

    Raises:
        DocumentError: one line naming the file: unreadable, none of the three, or a bad field.
    """
    name = visible(str(path))
    try:
        doc = read_json(path)
    except DocumentError as exc:
        if _first_line_is_a_test(path):
            raise DocumentError(f"{exc}: llama-bench -o jsonl? run it with -o json") from None
        raise
    if is_llama_bench([doc]):
        raise DocumentError(f"{name}: one llama-bench test (-o jsonl?): run llama-bench with -o json")
    if isinstance(doc, dict) and "schema" in doc:
        return validate(doc, name)
    if is_llama_bench(doc):
        return from_llama_bench(doc, name)
    if is_benchy(doc):
        return from_benchy(doc, name)
    raise DocumentError(f"{name}: not {KINDS}")
