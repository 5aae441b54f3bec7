"""Column labels and order for a fleet of results files (`precmon compare`, docs/design.md §3).

A lab's results come from many boxes, several of them called "vm" or "localhost", with GPUs
that matter more than the hostname. A column is therefore named by host *and* GPU
("spark-1 · GB10"), and two files whose hostname is the same but whose
`host.fingerprint.machine_id` (§5, a salted hash) differs get the hostname plus the shortest
prefix of their machine ids that tells them apart ("vm#3fa2", "vm#91c0"). Files written before
the machine id existed keep their bare hostname. Everything read here is untrusted file content:
only strings are used, bounded in length; renderers escape them for their medium.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from precmon.core.schema import ResultsDoc, VariantResult

VENDOR_PREFIXES = ("NVIDIA ", "AMD ", "Intel(R) ", "Intel ")
NAME_CHARS = 40
ID_PREFIX_CHARS = (4, 6, 8, 16)  # the shortest that tells a hostname's machines apart
NO_PRECISION = "?"


def _str(value: Any) -> str | None:
    return value.strip()[:NAME_CHARS] or None if isinstance(value, str) else None


def gpu_names(doc: ResultsDoc) -> list[str]:
    """The GPU names of a file: `host.gpus`, else `host.fingerprint.gpus` (NVML's names)."""
    names = [n for g in doc.host.gpus if (n := _str(g.name))]
    fp = doc.host.fingerprint  # any JSON shape from disk
    gpus = fp.get("gpus") if isinstance(fp, dict) and not names else None
    if isinstance(gpus, list):
        names = [n for g in gpus if isinstance(g, dict) and (n := _str(g.get("name")))]
    return names


def gpu_part(doc: ResultsDoc) -> str:
    """ "GB10", "2×H200", "H200+L40S", or "CPU" where the file names no GPU."""
    names = []
    for name in gpu_names(doc):
        for prefix in VENDOR_PREFIXES:
            name = name.removeprefix(prefix)
        names.append(name)
    if not names:
        return "CPU"
    counts = Counter(names)
    return "+".join(n if c == 1 else f"{c}×{n}" for n, c in counts.items())


def machine_id(doc: ResultsDoc) -> str | None:
    """`host.fingerprint.machine_id` where the file has one (hex digits only)."""
    fp = doc.host.fingerprint
    mid = fp.get("machine_id") if isinstance(fp, dict) else None
    if isinstance(mid, str) and 4 <= len(mid) <= 64 and all(c in "0123456789abcdef" for c in mid.lower()):
        return mid.lower()
    return None


def _hostname(doc: ResultsDoc) -> str:
    return _str(doc.host.hostname) or "unknown host"


def host_names(docs: list[ResultsDoc]) -> list[str]:
    """The host part of each file's column labels, in file order."""
    names = [_hostname(d) for d in docs]
    ids = [machine_id(d) for d in docs]
    out = list(names)
    for name in set(names):
        mine = {m for n, m in zip(names, ids, strict=True) if n == name and m is not None}
        if len(mine) < 2:
            continue  # one machine (or none that says which): the hostname is enough
        chars = next((n for n in ID_PREFIX_CHARS if len({m[:n] for m in mine}) == len(mine)), 64)
        for i, (n, mid) in enumerate(zip(names, ids, strict=True)):
            if n == name and mid is not None:
                out[i] = f"{name}#{mid[:chars]}"
    return out


def _precision(v: VariantResult) -> str:
    p = v.precision
    return p.strip().lower() if p is not None and p.strip() else NO_PRECISION


def group_by_precision(variants: list[VariantResult]) -> list[VariantResult]:
    """Precision-major order: the precisions in order of first appearance (files' order, then
    each file's variant order), each precision's columns in file order; no precision last."""
    first: dict[str, int] = {}
    for v in variants:
        first.setdefault(_precision(v), len(first))
    first[NO_PRECISION] = len(first) + 1
    return sorted(variants, key=lambda v: first[_precision(v)])  # stable: file order within one
