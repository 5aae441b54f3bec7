"""What only the report makes beside the results model (precmon.core.schema): a comparison's
document and its JSON, the keys a peer's file adds, and the error a file the report cannot read
raises.

The results document itself is `precmon.core.schema.ResultsDoc`; `report.load.load_document` is
the one way a file becomes one (it reads, parses and validates it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from precmon.core.schema import ResultsDoc, to_json

#: Keys a peer's file (report/importers/) adds beyond the model, kept in the records' `more` and
#: read by the llama-bench table: llama-bench's own model type (a variant's), and its compute
#: backend (a variant's `server`'s).
PEER_MODEL_TYPE = "model_type"
PEER_BACKEND = "backend"


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


def compare_json(doc: CompareDoc) -> dict[str, Any]:
    """A comparison as its JSON, `precmon.compare/1` (docs/design.md §3): `schema`, `group`,
    `sources`, the merged `settings` and `variants` (each as the model writes it), and
    `fingerprint_diff` where the files' environments differ. It has no host or date of its own:
    the document-level keys of a results file are not written."""
    out: dict[str, Any] = {
        "schema": doc.schema,
        "group": doc.group,
        "sources": [dataclasses.asdict(s) for s in doc.sources],
        "settings": doc.settings,
        "variants": [to_json(v) for v in doc.variants],
    }
    if doc.fingerprint_diff:
        out["fingerprint_diff"] = doc.fingerprint_diff
    return out


class DocumentError(ValueError):
    """A results file that the report cannot read; the message is one line naming file and field."""
