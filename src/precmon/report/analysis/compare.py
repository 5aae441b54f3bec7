"""Line up several result files (different machines, dates or servers) side by side.

Every variant of every file becomes one column labelled "host · GPU · label · date", and the
usual comparison table is built over them, so the same renderers (terminal, Markdown, HTML, CSV)
work: `sections.build_compare` makes the report model, `export.render_compare` renders it.
Ratios are against the first column that did not fail.

A fleet has many hosts called "vm": the host part is the hostname, and where files share one
but their `host.fingerprint.machine_id` differs, the hostname plus the shortest prefix of the
machine id that tells them apart ("vm#3fa2", `fleet.py`). Columns follow the files' order, or
with `group="precision"` precision-major, so the F16 of host A sits beside the F16 of host B.
"""

from __future__ import annotations

import dataclasses

from precmon.core.cells import size_order
from precmon.core.schema import ResultsDoc, VariantResult
from precmon.report.analysis.fleet import gpu_part, group_by_precision, host_names
from precmon.report.fmt import is_number
from precmon.report.formats import COMPARE_GROUPS
from precmon.report.model import CompareDoc, SourceDoc
from precmon.report.table import ComparisonTable, build_table

COMPARE_SCHEMA = "precmon.compare/1"
GROUPS = COMPARE_GROUPS  # `precmon compare --group`


def column_label(doc: ResultsDoc, variant: VariantResult, host: str | None = None) -> str:
    """ "host · GPU · label · date" for one variant of one results document.

    Args:
        host: the host part when it must tell apart hosts of one name (`fleet.host_names`);
            the document's hostname otherwise.
    """
    if host is None:
        host = doc.host.hostname or "unknown host"
    date = (doc.created or "")[:10] or "undated"
    return f"{host} · {gpu_part(doc)} · {variant.label} · {date}"


def _union_sizes(docs: list[ResultsDoc], key: str) -> list[int | str]:
    sizes: set[str] = set()
    for doc in docs:
        value = doc.settings.get(key)
        for s in value if isinstance(value, list) else [value]:
            if is_number(s) or isinstance(s, str):
                sizes.add(str(s))
    return [int(s) if s.isdigit() else s for s in sorted(sizes, key=size_order)]


def merge_documents(docs: list[ResultsDoc], names: list[str] | None = None, group: str = "file") -> CompareDoc:
    """One pseudo results document whose variants are all the files' variants, relabelled.

    Args:
        docs: results documents (docs/design.md §5), in file order.
        names: where each came from (file paths), kept in `sources`.
        group: "file" (columns in file order) or "precision" (precision-major, then file order).
    """
    if group not in GROUPS:
        raise ValueError(f"unknown --group {group!r}: expected one of {', '.join(GROUPS)}")
    hosts = host_names(docs)
    variants: list[VariantResult] = []
    seen: dict[str, int] = {}
    for doc, host in zip(docs, hosts, strict=True):
        for v in doc.variants:
            label = column_label(doc, v, host)
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:  # the same host, label and day twice: keep the columns apart
                label = f"{label} #{seen[label]}"
            variants.append(dataclasses.replace(v, label=label))
    if group == "precision":
        variants = group_by_precision(variants)
    return CompareDoc(
        schema=COMPARE_SCHEMA,
        group=group,
        sources=[
            SourceDoc(
                file=names[i] if names and i < len(names) else None,
                host=d.host.hostname,
                host_label=hosts[i],
                created=d.created,
                gpus=[g.name for g in d.host.gpus],
            )
            for i, d in enumerate(docs)
        ],
        settings={
            "prefill_tokens": _union_sizes(docs, "prefill_tokens"),
            "ttft_tokens": _union_sizes(docs, "ttft_tokens"),
        },
        variants=variants,
    )


def compare_table(docs: list[ResultsDoc], group: str = "file") -> ComparisonTable:
    """The comparison table across files; ratios against the first column that did not fail."""
    return build_table(merge_documents(docs, group=group))
