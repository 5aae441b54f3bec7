"""`--format llama-bench`: the results as llama-bench's own Markdown table, to paste beside theirs.

llama-bench (`-o md`) prints `| model | size | params | backend | threads | test | t/s |` (`ngl`
in place of `threads` on a GPU backend) with the model as "llama 8B Q4_K - Medium" (architecture,
size, file type), the size as "37.30 MiB" / "4.58 GiB", the parameter count as "60.04 M" /
"8.03 B", tests named `pp512` (a 512-token prompt), `tg128` (128 generated tokens) and `pp512 @
d4096` at depth, t/s as `mean ± stdev` of the per-repetition rates, and `build: COMMIT (NUMBER)`
under the table. This table keeps its column widths, alignment, number formats and that line:
- model: the GGUF header's architecture, the parameter count as a size ("135M", "8B") and the file
  type where the file holds them (`weights`, `model_info`), the label after it where it is not in
  it; else the model name and label as before (llama-bench's own size class comes from the
  layer count, which precmon does not read: its "256M" can be precmon's "135M").
- threads / ngl: the launch argv's `-t` / `-ngl` (`server.launch_flags`), "n/a" where precmon did
  not launch the server; ngl where some variant's compute path is a GPU's.
- build: each llama.cpp build's `b<number>-<commit>` version, as llama-bench writes it.
Every text from the file is escaped for Markdown (`fmt.md_text`), as the report's Markdown is.

The mapping is precmon's metrics (docs/design.md §4), stated under the table:
- `ppN`: N prompt tokens / prefill time, from each valid prefill run at size N
  (1000 / `prefill_ms_per_token`), then mean ± sample stdev over the runs, as llama-bench does.
- `tgM`: each valid decode run's `decode_tok_s` with M = its output tokens. precmon's decode follows
  a short prompt (`decode_prompt_tokens`) and times the tokens after the first; llama-bench's
  tg starts from an empty context. Near, not identical: the note says so.
- A file without runs falls back to the metric and `metrics_stats`' stdev (for pp converted by
  the first-order rule sd(1000/x) ≈ 1000·sd(x)/x²); with neither, "± n/a".
- size: `model_size_bytes` (variant, metrics or the server's model info); params: the server's
  `model_info.n_params` (llama-server reports it); "n/a" where the file holds neither.
- backend: the server kind's display name (core/server_names.py; llama.cpp does not report its
  compute backend over HTTP); for a llama-bench file read by `compare`
  (report/importers/llama_bench.py), its own `backends` and `model_type`.
- Depth (`@ dD`, llama-bench's order: every test at d0, then every test at each depth): `ppN @ dD`
  from the `depth_prefill` runs (N new tokens after D cached ones: N / their prefill time), `tgM @
  dD` from the `depth_decode` runs (docs/design.md §4 "Context depth"), or from
  `prefill_ms_per_token_at_depth` / `decode_tok_s_at_depth` without runs. Depth 0 rows are the
  plain `ppN` / `tgM` where the file has no ordinary prefill or decode of that size.
Failed variants have no rows: llama-bench prints none for a test that did not run.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from precmon.core import phases
from precmon.core.cells import RowKey, size_order
from precmon.core.metric_keys import KEY
from precmon.core.schema import Run, VariantResult
from precmon.core.server_names import DISPLAY_NAMES
from precmon.report.fmt import NA, is_number, md_text
from precmon.report.model import PEER_BACKEND, PEER_MODEL_TYPE
from precmon.report.sections import Report
from precmon.report.table import variant_stats

# (header, width, right-aligned): llama-bench 0.3.36's markdown printer; the fifth is `threads`
# (width 7) or, on a GPU backend, `ngl` (width 3)
COLUMNS = (
    ("model", 30, False),
    ("size", 10, True),
    ("params", 10, True),
    ("backend", 10, False),
    ("threads", 7, True),
    ("test", 15, True),
    ("t/s", 20, True),
)
NGL = ("ngl", 3, True)
BUILD = re.compile(r"^b(\d+)-([0-9a-f]{6,40})$")
GIB, MIB = 1024**3, 1024**2


def format_size(size_bytes: Any) -> str:
    """llama-bench's size: MiB below 1 GiB, GiB from there, two decimals."""
    if not is_number(size_bytes) or size_bytes <= 0:
        return NA
    return f"{size_bytes / MIB:.2f} MiB" if size_bytes < GIB else f"{size_bytes / GIB:.2f} GiB"


def format_params(n_params: Any) -> str:
    """llama-bench's parameter count: millions below 1e9, billions from there."""
    if not is_number(n_params) or n_params <= 0:
        return NA
    return f"{n_params / 1e6:.2f} M" if n_params < 1e9 else f"{n_params / 1e9:.2f} B"


def format_rate(mean: float | None, stdev: float | None) -> str:
    if mean is None:
        return NA
    return f"{mean:.2f} ± {stdev:.2f}" if stdev is not None else f"{mean:.2f} ± {NA}"


def llama_test_name(kind: str, tokens: int | str, depth: int | str | None = None) -> str:
    """`pp512`, `tg128`, `pp512 @ d4096` (depth only when there is one: llama-bench's rule)."""
    return f"{kind}{tokens}" + (f" @ d{depth}" if depth not in (None, 0, "0") else "")


def mean_stdev(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample stdev (n−1) as llama-bench reports them; stdev 0 for one value."""
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def _ok_runs(variant: VariantResult, phase: str) -> list[Run]:
    return [r for r in variant.runs if r.phase == phase and r.ok]


def _stat(stats: dict[str, Any], key: RowKey, field: str) -> float | None:
    entry = stats.get(key.stats_key)
    value = entry.get(field) if isinstance(entry, dict) else None
    return float(value) if is_number(value) else None


def prefill_tests(variant: VariantResult) -> list[tuple[str, float | None, float | None]]:
    """(test, mean tok/s, stdev tok/s) per prefill size, smallest first."""
    per_run: dict[str, list[float]] = {}
    for r in _ok_runs(variant, phases.PREFILL):
        size = r.target_prompt_tokens if r.target_prompt_tokens is not None else r.prompt_tokens
        ms = r.prefill_ms_per_token
        if is_number(size) and is_number(ms) and ms > 0:
            per_run.setdefault(str(size), []).append(1000.0 / ms)
    tests = {size: mean_stdev(values) for size, values in per_run.items()}
    measured = variant.metrics.get(KEY.prefill_ms_per_token)
    stats = variant_stats(variant)
    for size, ms in (measured if isinstance(measured, dict) else {}).items():
        if size not in tests and is_number(ms) and ms > 0:  # no runs in the file: the metric
            sd_ms = _stat(stats, RowKey(KEY.prefill_ms_per_token, size), "stdev")
            tests[size] = (1000.0 / ms, None if sd_ms is None else 1000.0 * sd_ms / ms**2)
    return [(llama_test_name("pp", size), *tests[size]) for size in sorted(tests, key=size_order)]


def decode_tests(variant: VariantResult, output_tokens: Any) -> list[tuple[str, float | None, float | None]]:
    """(test, mean tok/s, stdev tok/s) per decode length (normally one: the sweep's output_tokens)."""
    by_len: dict[str, list[float]] = {}
    for r in _ok_runs(variant, phases.DECODE):
        n: Any = r.output_tokens
        rate = r.decode_tok_s
        if not is_number(n):  # a run that does not say its length (llama-benchy without response_size)
            n = output_tokens
        if is_number(rate):  # a length neither the run nor the settings give is "tg?", not a lost row
            by_len.setdefault(str(int(n)) if is_number(n) else "?", []).append(float(rate))
    if by_len:
        return [
            (llama_test_name("tg", n), *mean_stdev(v))
            for n, v in sorted(by_len.items(), key=lambda kv: size_order(kv[0]))
        ]
    measured = variant.metrics.get(KEY.decode_tok_s)
    if not is_number(measured) or not is_number(output_tokens):
        return []
    return [
        (
            llama_test_name("tg", int(output_tokens)),
            float(measured),
            _stat(variant_stats(variant), RowKey(KEY.decode_tok_s), "stdev"),
        )
    ]


def depth_tests(variant: VariantResult, output_tokens: Any) -> dict[int, list[tuple[str, float | None, float | None]]]:
    """{depth: [(test, mean tok/s, stdev tok/s)]}: pp sizes then tg, per depth of the depth runs."""
    per: dict[tuple[int, str, int], list[float]] = {}
    for phase, kind in ((phases.DEPTH_PREFILL, "pp"), (phases.DEPTH_DECODE, "tg")):
        for r in _ok_runs(variant, phase):
            depth = r.depth_tokens
            size = r.target_prompt_tokens if kind == "pp" else r.output_tokens
            rate = _rate(r, kind)
            if is_number(depth) and is_number(size) and rate is not None:
                per.setdefault((int(depth), kind, int(size)), []).append(rate)
    tests = {key: mean_stdev(values) for key, values in per.items()}
    m, stats = variant.metrics, variant_stats(variant)
    grid, decode = m.get(KEY.prefill_ms_per_token_at_depth), m.get(KEY.decode_tok_s_at_depth)
    for depth, entry in (grid if isinstance(grid, dict) else {}).items():
        for size, ms in (entry if isinstance(entry, dict) else {}).items():
            key = (int(depth), "pp", int(size))
            if key not in tests and is_number(ms) and ms > 0:  # no runs in the file: the metric
                sd_ms = _stat(stats, RowKey(KEY.prefill_ms_per_token_at_depth, size, depth), "stdev")
                tests[key] = (1000.0 / ms, None if sd_ms is None else 1000.0 * sd_ms / ms**2)
    for depth, rate in (decode if isinstance(decode, dict) else {}).items():
        if is_number(output_tokens) and is_number(rate) and not any(k[:2] == (int(depth), "tg") for k in tests):
            tests[(int(depth), "tg", int(output_tokens))] = (
                float(rate),
                _stat(stats, RowKey(KEY.decode_tok_s_at_depth, depth), "stdev"),
            )
    out: dict[int, list[tuple[str, float | None, float | None]]] = {}
    for depth, kind, size in sorted(tests, key=lambda k: (k[0], k[1] != "pp", k[2])):
        out.setdefault(depth, []).append((llama_test_name(kind, size, depth), *tests[(depth, kind, size)]))
    return out


def _rate(run: Run, kind: str) -> float | None:
    """A depth run's tok/s: 1000 / prefill ms/token for pp, decode tok/s for tg."""
    value = run.prefill_ms_per_token if kind == "pp" else run.decode_tok_s
    if not is_number(value) or value <= 0:
        return None
    return 1000.0 / value if kind == "pp" else float(value)


def _size_bytes(variant: VariantResult) -> Any:
    for value in (
        variant.model_size_bytes,
        variant.metrics.get("model_size_bytes"),
        (variant.model_info or {}).get("size_bytes"),
    ):
        if is_number(value) and value > 0:
            return value
    return None


def size_class(n_params: Any) -> str | None:
    """A parameter count as llama.cpp names model sizes: "135M", "1.5B", "8B", "70B"."""
    if not is_number(n_params) or n_params <= 0:
        return None
    if n_params < 1e9:
        return f"{round(n_params / 1e6)}M"
    b = n_params / 1e9
    return (f"{b:.1f}".rstrip("0").rstrip(".") if b < 10 else f"{b:.0f}") + "B"


def _desc(variant: VariantResult) -> str | None:
    """llama.cpp's model description, "llama 135M Q8_0", where the file holds its parts."""
    weights, info = variant.weights or {}, variant.model_info or {}
    arch, ftype = weights.get("architecture"), weights.get("file_type") or info.get("quantization")
    size = size_class(info.get("n_params"))
    if not (isinstance(arch, str) and arch and isinstance(ftype, str) and ftype and size):
        return None
    desc = f"{arch} {size} {ftype}"
    return desc if variant.label in desc else f"{desc} ({variant.label})"


def _model(variant: VariantResult) -> str:
    """llama-bench's own model name where a llama-bench file gave one, else llama.cpp's description
    where the file holds it, else the model and label."""
    model, label = variant.model or "", variant.label
    if model.lower().endswith(".gguf"):  # a launched llama-server's model is its file's path
        model = model.replace("\\", "/").rsplit("/", 1)[-1][: -len(".gguf")]
    text = model if label and label in model else " ".join(p for p in (model, label) if p)
    own = variant.more.get(PEER_MODEL_TYPE)
    text = own if isinstance(own, str) and own else (_desc(variant) or text)
    return md_text(text or "?")


def _on_gpu(variant: VariantResult) -> bool:
    backend = (variant.compute_path or {}).get("backend")
    return isinstance(backend, str) and bool(backend) and backend.upper() != "CPU"


def _threads_or_ngl(variant: VariantResult, gpu: bool) -> str:
    flags = variant.server.launch_flags or {}
    value = flags.get("n_gpu_layers" if gpu else "threads")
    return md_text(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else NA


def _columns(gpu: bool) -> tuple[tuple[str, int, bool], ...]:
    return COLUMNS[:4] + ((NGL,) if gpu else COLUMNS[4:5]) + COLUMNS[5:]


def _line(cells: tuple[str, ...], gpu: bool = False) -> str:
    cols = _columns(gpu)
    padded = [c.rjust(w) if right else c.ljust(w) for c, (_, w, right) in zip(cells, cols, strict=True)]
    return "| " + " | ".join(padded) + " |"


def rows(variant: VariantResult, output_tokens: Any, gpu: bool = False) -> list[tuple[str, ...]]:
    """The table rows of one variant, pp before tg (llama-bench's order); none for a failed one."""
    if variant.status == "failed":
        return []
    n_params = (variant.model_info or {}).get("n_params")
    kind = variant.server.kind or ""
    backend = variant.server.more.get(PEER_BACKEND)  # a llama-bench file's own
    path_backend = (variant.compute_path or {}).get("backend")  # "CPU", "CUDA": llama-bench's words
    kind = backend if isinstance(backend, str) and backend else kind
    shown = path_backend if isinstance(path_backend, str) and path_backend else DISPLAY_NAMES.get(kind, kind or NA)
    head = (
        _model(variant),
        format_size(_size_bytes(variant)),
        format_params(n_params),
        md_text(shown),
        _threads_or_ngl(variant, gpu),
    )
    tests = prefill_tests(variant) + decode_tests(variant, output_tokens)
    at_depth = depth_tests(variant, output_tokens)
    names = {name for name, _, _ in tests}
    tests += [t for t in at_depth.pop(0, []) if t[0] not in names]  # d0: the plain test, once
    tests += [t for depth in sorted(at_depth) for t in at_depth[depth]]
    return [(*head, name, format_rate(mean, sd)) for name, mean, sd in tests]


def build_line(variants: list[VariantResult]) -> str | None:
    """llama-bench's `build: 0c1e570 (6000)` for each llama.cpp build (`b6000-0c1e570`) measured."""
    builds = []
    for v in variants:
        m = BUILD.match(v.server.version or "")
        if m and (b := f"{m.group(2)} ({m.group(1)})") not in builds:
            builds.append(b)
    return f"build: {', '.join(builds)}" if builds else None


def render_llama_bench(report: Report) -> str:
    """The report's variants as llama-bench's Markdown table, then one line on what the tests are."""
    doc = report.doc
    settings = doc.settings
    output_tokens = settings.get("output_tokens")
    gpu = any(_on_gpu(v) for v in doc.variants)
    cols = _columns(gpu)
    lines = [_line(tuple(h for h, _, _ in cols), gpu)]
    lines.append("| " + " | ".join(("-" * (w - 1) + ":") if right else "-" * w for _, w, right in cols) + " |")
    for v in doc.variants:
        lines.extend(_line(r, gpu) for r in rows(v, output_tokens, gpu))
    if build := build_line(doc.variants):
        lines += ["", build]
    prompt = settings.get("decode_prompt_tokens")
    after = f" after a {prompt}-token prompt" if is_number(prompt) else ""
    version = doc.precmon_version
    who = f"precmon {md_text(version)}" if version else "precmon"
    note = f"{who} rows: ppN = N prompt tokens / prefill time; tgM = M generated tokens{after}"
    note += ", first token excluded"
    if any(depth_tests(v, output_tokens) for v in doc.variants):
        note += "; @ dD: after D tokens already in context, served from the prompt cache"
    return "\n".join(lines) + f"\n\n{note}\n"
