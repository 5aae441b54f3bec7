"""llama-bench's `-o json` read as precmon columns for `precmon compare`.

A llama-bench file (a list of test objects with `n_prompt`, `n_gen` and `samples_ts`) becomes a
results document with one variant per model file (and KV cache type) whose runs are the
per-repetition rates (report/importers/peer_doc.py):

- `pN` tests (n_gen 0) → prefill runs at N (`prefill_ms_per_token` = 1000 / t/s); `tgM` tests
  (n_prompt 0) → decode runs of M tokens; at a depth (`-d`, `n_depth` D > 0) the same as
  `depth_prefill` / `depth_decode` runs at D (precmon's `@ dD` rows, docs/design.md §4 "Context
  depth"), and in a file with depths the d0 tests are also the depth-0 runs. Mixed `pp+tg` tests
  have no precmon row: they are left out, with a warning on the column.

Numbers whose meaning differs (llama-bench's tg starts from an empty context, precmon's after a
short prompt) are not adjusted: the columns say which tool measured them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from precmon.core import phases
from precmon.core.schema import ResultsDoc, Run, ServerInfo, VariantResult
from precmon.report.importers.peer_doc import MIN_RATE_TOK_S, Reader, document, medians, prefill_run
from precmon.report.model import PEER_BACKEND, PEER_MODEL_TYPE

#: A plain test's phase → the same test's phase at depth 0 (in a file with depths, d0 is a depth too).
AT_DEPTH = {phases.PREFILL: phases.DEPTH_PREFILL, phases.DECODE: phases.DEPTH_DECODE}


def is_llama_bench(doc: Any) -> bool:
    """llama-bench `-o json`: a non-empty list of test objects."""
    keys = ("n_prompt", "n_gen", "avg_ts")
    return isinstance(doc, list) and bool(doc) and all(isinstance(t, dict) and all(k in t for k in keys) for t in doc)


def _depth_run(depth: int, n_prompt: int, n_gen: int, tok_s: float) -> Run:
    """One llama-bench repetition at a depth, as precmon's depth run of it."""
    if n_gen == 0:
        return Run(
            phases.DEPTH_PREFILL, depth_tokens=depth, target_prompt_tokens=n_prompt, prefill_ms_per_token=1000.0 / tok_s
        )
    return Run(phases.DEPTH_DECODE, depth_tokens=depth, output_tokens=n_gen, decode_tok_s=tok_s)


def _as_depth_zero(run: Run) -> Run:
    return dataclasses.replace(run, phase=AT_DEPTH[run.phase], depth_tokens=0)


def _unique_label(key: tuple[str, str, str], model_type: str, taken: list[str]) -> str:
    """`llama-bench MODEL` (+ ` KV K` or ` KV K/V` off f16), with the file name where two model
    files share a model type: the label names a column, and two alike were indistinguishable."""
    k, v = key[1] or "?", key[2] or "?"
    kv = "" if k == v == "f16" else f" KV {k}" if k == v else f" KV {k}/{v}"
    label = f"llama-bench {model_type or Path(key[0]).name}{kv}"
    return f"{label} ({Path(key[0]).name or '?'})" if label in taken else label


def _new_variant(r: Reader, t: dict[str, Any], key: tuple[str, str, str], path: str, taken: list[str]) -> VariantResult:
    """The variant of one model file and KV cache type, before its runs are added; llama-bench's
    own model type and backend kept beside the model's fields (`more`)."""
    server = ServerInfo(kind="llama-bench", version=r.text(t, "build_commit") or None)
    server.more = {PEER_BACKEND: r.text(t, "backends") or None}
    v = VariantResult(
        label=_unique_label(key, r.text(t, "model_type"), taken),
        model=Path(key[0]).name or None,
        server=server,
        model_size_bytes=r.count(t, "model_size", path) or None,
        model_info={"n_params": r.count(t, "model_n_params", path) or None},
        kv_cache_dtype=key[1] or None,
        warnings=[],
    )
    v.more = {PEER_MODEL_TYPE: r.text(t, "model_type") or None}
    return v


def _left_out(v: VariantResult, line: str) -> None:
    """A warning on the column for each test left out (a test repeated in the file: each time)."""
    v.warnings = [*(v.warnings or []), line]


def _finish(variants: dict[tuple[str, str, str], VariantResult], depths: set[int]) -> None:
    """Each variant's medians and status once every test is read (d0 runs copied where depths are)."""
    for v in variants.values():
        if depths:  # d0 is a depth too: the plain tests, as llama-bench's own d0 rows
            v.runs += [_as_depth_zero(r) for r in v.runs if r.phase in AT_DEPTH]
        v.metrics = medians(v.runs)
        v.status = "ok" if v.runs else "failed"
        v.errors = [] if v.runs else ["no llama-bench test here has a precmon row"]


def from_llama_bench(tests: list[dict[str, Any]], name: str) -> ResultsDoc:
    """llama-bench `-o json` as a results document: one variant per model file and KV cache type."""
    r = Reader(name)
    variants: dict[tuple[str, str, str], VariantResult] = {}
    sizes: list[int] = []
    depths: set[int] = set()
    for i, t in enumerate(tests):
        path = f"[{i}]"
        n_prompt, n_gen, depth = (r.count(t, k, path) for k in ("n_prompt", "n_gen", "n_depth"))
        rates = r.values(t, "samples_ts", path) or [r.number(t, "avg_ts", path)]
        key = (r.text(t, "model_filename"), r.text(t, "type_k"), r.text(t, "type_v"))
        if key not in variants:
            variants[key] = _new_variant(r, t, key, path, [v.label for v in variants.values()])
        v = variants[key]
        test = f"pp{n_prompt}" if n_gen == 0 else (f"tg{n_gen}" if n_prompt == 0 else f"pp{n_prompt}+tg{n_gen}")
        named = f"llama-bench test {test}{f' @ d{depth}' if depth else ''}"
        if (n_prompt and n_gen) or not (n_prompt or n_gen):
            _left_out(v, f"{named}: no precmon row; left out")
        elif any(x < MIN_RATE_TOK_S for x in rates):
            _left_out(v, f"{named}: a rate of 0 t/s; left out")
        elif depth:
            depths.add(depth)
            v.runs += [_depth_run(depth, n_prompt, n_gen, x) for x in rates]
        elif n_gen == 0:
            sizes.append(n_prompt)
            v.runs += [prefill_run(n_prompt, x) for x in rates]
        else:
            v.runs += [Run(phases.DECODE, output_tokens=n_gen, decode_tok_s=x) for x in rates]
    _finish(variants, depths)
    first = tests[0]
    host = r.text(first, "gpu_info") or r.text(first, "cpu_info")  # llama-bench names no host
    planned = {"depth": sorted(depths | {0})} if depths else {}
    return document(host, r.text(first, "test_time"), list(variants.values()), sizes, name, **planned)
