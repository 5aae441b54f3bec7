"""What only the report makes beside the results model (precmon.core.schema): a comparison's
document, and the error a file the report cannot read raises.

The results document itself is `precmon.core.schema.ResultsDoc`; `report.load.load_document` is
the one way a file becomes one (it reads, parses and validates it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from precmon.core.schema import ResultsDoc


@dataclass
class SourceDoc:
    """One file of a comparison."""

    file: str | None
    host: str | None
    host_label: str  # the hostname, or "vm#3fa2" where files share a hostname (report/analysis/fleet.py)
    created: str | None
    gpus: list[str | None]


@dataclass
class CompareDoc(ResultsDoc):
    """What `compare.merge_documents` makes: every file's variants, relabelled, and where they came from."""

    group: str = "file"  # "file" | "precision": the column order
    sources: list[SourceDoc] = field(default_factory=list)
    fingerprint_diff: list[dict[str, Any]] = field(default_factory=list)  # {"key", "values"}: where environments differ


class DocumentError(ValueError):
    """A results file that the report cannot read; the message is one line naming file and field."""
