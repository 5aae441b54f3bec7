"""The results document (docs/design.md §5) as the report reads it: the schema's types, and the report's own.

`ResultsDoc`, `VariantDoc`, `RunDoc`, `HostDoc` ... are precmon.core.schema.model's (TypedDicts
held to the field table of core/schema/__init__.py); this module adds what only the report makes (a
comparison's `CompareDoc`), its `DocumentError`, and `own_document`. `report.load.load_document`
is the one way a file becomes a `ResultsDoc`: it reads, parses and validates it.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

# The document's own types are the schema's (precmon.core.schema.model, held to the field table);
# re-exported here, where report/ and tui/ have always imported them.
from precmon.core.schema.model import GpuDoc as GpuDoc
from precmon.core.schema.model import HostDoc as HostDoc
from precmon.core.schema.model import PowerSourceDoc as PowerSourceDoc
from precmon.core.schema.model import ResultsDoc
from precmon.core.schema.model import RunDoc as RunDoc
from precmon.core.schema.model import RunExtraDoc as RunExtraDoc
from precmon.core.schema.model import VariantDoc as VariantDoc


class SourceDoc(TypedDict):
    file: str | None
    host: str | None
    host_label: str  # the hostname, or "vm#3fa2" where files share a hostname (report/analysis/fleet.py)
    created: str | None
    gpus: list[str | None]


class CompareDoc(ResultsDoc, total=False):
    """What `compare.merge_documents` makes: every file's variants, relabelled, and where they came from."""

    group: str  # "file" | "precision": the column order
    sources: list[SourceDoc]
    fingerprint_diff: list[dict[str, Any]]  # {"key", "values"}: only where the files' environments differ


class DocumentError(ValueError):
    """A results file that the report cannot read; the message is one line naming file and field."""


def own_document(doc: dict[str, Any]) -> ResultsDoc:
    """A results document precmon itself just built (`measure.results.results_document`, the sweep
    store, the TUI's live results) as the typed model. Files from disk go through
    `report.load.load_document`, which validates them; precmon's own documents are well formed by
    construction (measure/checks.py validates every record as it is made)."""
    return cast(ResultsDoc, doc)
