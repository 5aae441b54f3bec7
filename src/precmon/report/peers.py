"""What llama-bench and llama-benchy write, read as precmon columns for `precmon compare`.

`load_any` tells a file's kind by its shape: a precmon results file (an object with `schema`),
llama-bench's `-o json` (a list of test objects with `n_prompt`, `n_gen` and `samples_ts`) or
llama-benchy's JSON report (an object with `benchmarks` holding `pp_throughput`/`tg_throughput`).
A peer's file becomes a results document (docs/design.md §5) with one variant per model (and KV
cache type) whose runs are the peer's per-repetition rates, so the ± and the CIs of the table are
worked out the same way as precmon's own:

- llama-bench `pN` tests (n_gen 0) → prefill runs at N (`prefill_ms_per_token` = 1000 / t/s);
  `tgM` tests (n_prompt 0) → decode runs of M tokens; at a depth (`-d`, `n_depth` D > 0) the same
  as `depth_prefill` / `depth_decode` runs at D (precmon's `@ dD` rows, docs/design.md §4 "Context
  depth"), and in a file with depths the d0 tests are also the depth-0 runs. Mixed `pp+tg` tests
  have no precmon row: they are left out, with a warning on the column.
- llama-benchy's per-request `tg_req_throughput` → decode runs (its decode rate is tokens after
  the first / (last − first token time), precmon's definition), `pp_req_throughput` → prefill runs
  at its prompt size, `e2e_ttft` (request start → first content, precmon's TTFT) → TTFT at that
  size. Only depth-0 (`context_size` 0), single-user entries are read; others are warned about.

Every number read is checked (finite, not negative); a fault is one `DocumentError` line naming the
file and the field. Numbers whose meaning differs (llama-bench's tg starts from an empty context,
precmon's after a short prompt) are not adjusted: the columns say which tool measured them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from precmon.measure.checks import MAX_VALUE
from precmon.measure.results import SCHEMA
from precmon.report.load import read_json, validate
from precmon.report.model import DocumentError, ResultsDoc
from precmon.untrusted import visible

#: slower than this is no rate (1000 / it would overflow the results' bounds): left out
MIN_RATE_TOK_S = 1e-6
KINDS = "a precmon results file, a llama-bench -o json file or a llama-benchy JSON report"


def is_llama_bench(doc: Any) -> bool:
    """llama-bench `-o json`: a non-empty list of test objects."""
    keys = ("n_prompt", "n_gen", "avg_ts")
    return isinstance(doc, list) and bool(doc) and all(isinstance(t, dict) and all(k in t for k in keys) for t in doc)


def is_benchy(doc: Any) -> bool:
    """llama-benchy's report: `benchmarks`, each with pp/tg throughput objects."""
    if not isinstance(doc, dict) or "schema" in doc or not isinstance(doc.get("benchmarks"), list):
        return False
    runs = doc["benchmarks"]
    keys = ("tg_throughput", "pp_throughput", "tg_req_throughput", "pp_req_throughput")
    return bool(runs) and all(isinstance(b, dict) and any(k in b for k in keys) for b in runs)


def benchy_requests(report: dict[str, Any]) -> dict[str, list[float]]:
    """Per-request decode tok/s and end-to-end TTFT (ms) of llama-benchy's first benchmark.

    llama-benchy's decode rate is (tokens after the first) / (last token time - first token
    time), the same definition as precmon's; its e2e_ttft is request start -> first content
    chunk, the same as precmon's TTFT (its `ttft` subtracts a /models round trip; not used).
    """
    bench = report["benchmarks"][0]
    return {
        "decode_tok_s": [float(v) for v in (bench.get("tg_req_throughput") or {}).get("values", [])],
        "ttft_ms": [float(v) for v in (bench.get("e2e_ttft") or {}).get("values", [])],
    }


class _Reader:
    """Checked field access on a peer's file; faults name the file and the field path."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, path: str, what: str, value: Any) -> DocumentError:
        shown = visible(repr(value), limit=40)
        return DocumentError(f"{self.name}: {path}: expected {what}, got {shown}")

    def check(self, v: Any, path: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_VALUE:
            raise self.fail(path, f"a number from 0 to {MAX_VALUE:g}", v)
        return float(v)

    def number(self, obj: dict[str, Any], key: str, path: str) -> float:
        return self.check(obj.get(key), f"{path}.{key}")

    def count(self, obj: dict[str, Any], key: str, path: str) -> int:
        """A token or user count: an integer from 0 (0 when the key is absent)."""
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_VALUE:
            raise self.fail(f"{path}.{key}", "a whole number from 0", v)
        return v

    def values(self, obj: dict[str, Any], key: str, path: str) -> list[float]:
        """`obj[key]` as a list of numbers >= 0 (a missing key is no values)."""
        v = obj.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(f"{path}.{key}", "a list of numbers", v)
        return [self.check(x, f"{path}.{key}[{i}]") for i, x in enumerate(v)]

    def text(self, obj: dict[str, Any], key: str) -> str:
        v = obj.get(key)
        return visible(v, limit=120) if isinstance(v, str) else ""


def _run(phase: str, **fields: Any) -> dict[str, Any]:
    return {"phase": phase, "ok": True, **fields}


def _prefill_run(tokens: int, tok_s: float) -> dict[str, Any]:
    return _run("prefill", prompt_tokens=tokens, target_prompt_tokens=tokens, prefill_ms_per_token=1000.0 / tok_s)


def _depth_run(depth: int, n_prompt: int, n_gen: int, tok_s: float) -> dict[str, Any]:
    """One llama-bench repetition at a depth, as precmon's depth run of it."""
    if n_gen == 0:
        return _run(
            "depth_prefill", depth_tokens=depth, target_prompt_tokens=n_prompt, prefill_ms_per_token=1000.0 / tok_s
        )
    return _run("depth_decode", depth_tokens=depth, output_tokens=n_gen, decode_tok_s=tok_s)


def _as_depth_zero(run: dict[str, Any]) -> dict[str, Any]:
    return run | {"phase": f"depth_{run['phase']}", "depth_tokens": 0}


def _depth_metrics(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """`decode_tok_s_at_depth` and `prefill_ms_per_token_at_depth`: medians per depth (and size)."""
    decode: dict[int, list[float]] = {}
    grid: dict[int, dict[int, list[float]]] = {}
    for r in runs:
        if r["phase"] == "depth_decode":
            decode.setdefault(r["depth_tokens"], []).append(r["decode_tok_s"])
        elif r["phase"] == "depth_prefill":
            at = grid.setdefault(r["depth_tokens"], {})
            at.setdefault(r["target_prompt_tokens"], []).append(r["prefill_ms_per_token"])
    out: dict[str, Any] = {}
    if decode:
        out["decode_tok_s_at_depth"] = {str(d): statistics.median(decode[d]) for d in sorted(decode)}
    if grid:
        out["prefill_ms_per_token_at_depth"] = {
            str(d): {str(n): statistics.median(grid[d][n]) for n in sorted(grid[d])} for d in sorted(grid)
        }
    return out


def _metrics(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of the runs, as precmon's metrics are (docs/design.md §4)."""
    decode = [r["decode_tok_s"] for r in runs if r["phase"] == "decode"]
    metrics: dict[str, Any] = {"decode_tok_s": statistics.median(decode)} if decode else {}
    sizes: dict[str, list[float]] = {}
    for r in (r for r in runs if r["phase"] == "prefill"):
        sizes.setdefault(str(r["target_prompt_tokens"]), []).append(r["prefill_ms_per_token"])
    metrics["prefill_ms_per_token"] = {s: statistics.median(v) for s, v in sizes.items()}
    ttft: dict[str, list[float]] = {}
    for r in (r for r in runs if r["phase"] == "ttft"):
        ttft.setdefault(str(r["target_prompt_tokens"]), []).append(r["ttft_s"])
    if ttft:
        metrics["ttft_s"] = {s: statistics.median(v) for s, v in ttft.items()}
    return metrics | _depth_metrics(runs)


def _document(host: str, created: str, variants: list[dict[str, Any]], sizes: list[int], name: str) -> ResultsDoc:
    doc = {
        "schema": SCHEMA,
        "created": created or None,
        "host": {"hostname": host or None},
        "settings": {"prefill_tokens": sorted(set(sizes))},
        "variants": variants,
    }
    return validate(doc, name)


def _unique_label(key: tuple[str, str, str], model_type: str, taken: list[str]) -> str:
    """`llama-bench MODEL` (+ ` KV K` or ` KV K/V` off f16), with the file name where two model
    files share a model type: the label names a column, and two alike were indistinguishable."""
    k, v = key[1] or "?", key[2] or "?"
    kv = "" if k == v == "f16" else f" KV {k}" if k == v else f" KV {k}/{v}"
    label = f"llama-bench {model_type or Path(key[0]).name}{kv}"
    return f"{label} ({Path(key[0]).name or '?'})" if label in taken else label


def from_llama_bench(tests: list[dict[str, Any]], name: str) -> ResultsDoc:
    """llama-bench `-o json` as a results document: one variant per model file and KV cache type."""
    r = _Reader(name)
    variants: dict[tuple[str, str, str], dict[str, Any]] = {}
    sizes: list[int] = []
    depths: set[int] = set()
    for i, t in enumerate(tests):
        path = f"[{i}]"
        n_prompt, n_gen, depth = (r.count(t, k, path) for k in ("n_prompt", "n_gen", "n_depth"))
        rates = r.values(t, "samples_ts", path) or [r.number(t, "avg_ts", path)]
        key = (r.text(t, "model_filename"), r.text(t, "type_k"), r.text(t, "type_v"))
        if key not in variants:
            variants[key] = {
                "label": _unique_label(key, r.text(t, "model_type"), [v["label"] for v in variants.values()]),
                "model": Path(key[0]).name or None,
                "server": {
                    "kind": "llama-bench",
                    "version": r.text(t, "build_commit") or None,
                    "backend": r.text(t, "backends") or None,
                },
                "model_type": r.text(t, "model_type") or None,
                "status": "ok",
                "model_size_bytes": r.count(t, "model_size", path) or None,
                "model_info": {"n_params": r.count(t, "model_n_params", path) or None},
                "kv_cache_dtype": key[1] or None,
                "runs": [],
                "warnings": [],
            }
        v = variants[key]
        test = f"pp{n_prompt}" if n_gen == 0 else (f"tg{n_gen}" if n_prompt == 0 else f"pp{n_prompt}+tg{n_gen}")
        named = f"llama-bench test {test}{f' @ d{depth}' if depth else ''}"
        if (n_prompt and n_gen) or not (n_prompt or n_gen):
            v["warnings"].append(f"{named}: no precmon row; left out")
        elif any(x < MIN_RATE_TOK_S for x in rates):
            v["warnings"].append(f"{named}: a rate of 0 t/s; left out")
        elif depth:
            depths.add(depth)
            v["runs"] += [_depth_run(depth, n_prompt, n_gen, x) for x in rates]
        elif n_gen == 0:
            sizes.append(n_prompt)
            v["runs"] += [_prefill_run(n_prompt, x) for x in rates]
        else:
            v["runs"] += [_run("decode", output_tokens=n_gen, decode_tok_s=x) for x in rates]
    for v in variants.values():
        if depths:  # d0 is a depth too: the plain tests, as llama-bench's own d0 rows
            plain = [r for r in v["runs"] if r["phase"] in ("prefill", "decode")]
            v["runs"] += [_as_depth_zero(r) for r in plain]
        v["metrics"] = _metrics(v["runs"])
        v["status"] = "ok" if v["runs"] else "failed"
        v["errors"] = [] if v["runs"] else ["no llama-bench test here has a precmon row"]
    first = tests[0]
    host = r.text(first, "gpu_info") or r.text(first, "cpu_info")  # llama-bench names no host
    doc = _document(host, r.text(first, "test_time"), list(variants.values()), sizes, name)
    if depths:
        doc["settings"]["depth"] = sorted(depths | {0})
    return doc


def from_benchy(report: dict[str, Any], name: str) -> ResultsDoc:
    """llama-benchy's JSON report as a results document: one variant (its model)."""
    r = _Reader(name)
    runs: list[dict[str, Any]] = []
    warnings: list[str] = []
    sizes: list[int] = []
    for i, b in enumerate(report["benchmarks"]):
        path = f"benchmarks[{i}]"
        prompt, depth = r.count(b, "prompt_size", path), r.count(b, "context_size", path)
        users = r.count(b, "concurrency", path) if "concurrency" in b else 1
        if depth or users != 1:
            warnings.append(f"llama-benchy pp{prompt} @ d{depth}, {users} users: no precmon row; left out")
            continue
        part: dict[str, list[float]] = {}
        for key in ("tg_req_throughput", "pp_req_throughput", "e2e_ttft"):
            entry = b.get(key)
            if entry is not None and not isinstance(entry, dict):
                raise r.fail(f"{path}.{key}", "an object", entry)
            part[key] = r.values(entry or {}, "values", f"{path}.{key}")
        out_tokens = r.count(b, "response_size", path) or None
        runs += [_run("decode", output_tokens=out_tokens, decode_tok_s=x) for x in part["tg_req_throughput"]]
        if prompt:
            sizes.append(prompt)
            runs += [_prefill_run(prompt, x) for x in part["pp_req_throughput"] if x >= MIN_RATE_TOK_S]
            runs += [_run("ttft", target_prompt_tokens=prompt, ttft_s=ms / 1000.0) for ms in part["e2e_ttft"]]
    model = r.text(report, "model") or "?"
    variant = {
        "label": f"llama-benchy {model}",
        "model": model,
        "server": {"kind": "llama-benchy", "version": r.text(report, "version") or None},
        "status": "ok" if runs else "failed",
        "errors": [] if runs else ["no single-user, depth-0 benchmark in the report"],
        "warnings": warnings,
        "runs": runs,
        "metrics": _metrics(runs),
    }
    return _document("", r.text(report, "timestamp"), [variant], sizes, name)


def _first_line_is_a_test(path: Path | str) -> bool:
    """Whether the file's first line is one llama-bench test object (`-o jsonl` writes one a line)."""
    try:
        with open(path, "rb") as f:
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
