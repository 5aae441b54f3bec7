"""Load a results file once and validate it, so the report never meets a value it cannot show.

`load_document` reads, parses and checks every field the report reads: the renderers never meet a
wrong type, a non-finite or impossible number, or a recursion bomb. Every fault is a
`DocumentError` whose message is one line naming the file and the field path, e.g.
`r.json: variants[0].metrics.decode_tok_s: expected a number, got "fast"`; the commands exit 2.

Impossible values (a negative prefill, 1e308 tok/s, "NaN" as a string, bare NaN/Infinity) are
input errors, not "n/a": a file holding them was not written by precmon, or was damaged, and a
table that silently drops them would hide that. Runs marked invalid (`ok: false`) only need the
right types: precmon keeps what the server said there, and their values are excluded from every
median and series.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

from precmon.core import registry
from precmon.core import settings as plan_settings
from precmon.measure.checks import MAX_VALUE  # one bound for every reader of results
from precmon.measure.results import SCHEMA
from precmon.report.model import DocumentError, ResultsDoc
from precmon.untrusted import redact_tree, visible

#: Deeper than this is not a results file (the schema nests 5 levels; a bomb nests thousands).
MAX_DEPTH = 32
#: Largest file `load_document` reads, in bytes.
MAX_BYTES = 256 * 1024 * 1024
STATUSES = ("ok", "partial", "failed")


INT_RUN_FIELDS = ("prompt_tokens", "output_tokens", "cached_tokens", "target_prompt_tokens", "repeat", "depth_tokens")
NUM_RUN_FIELDS = ("ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99", "power_w", "energy_j")


_MISSING = object()  # a required key that is absent


def _shown(value: Any) -> str:
    """The offending value as JSON, short and safe to print."""
    if value is _MISSING:
        return "nothing"
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    if len(text) > 40:
        text = text[:37] + "..."
    return visible(text)


class _Checker:
    """Walks one document; `fail` raises DocumentError with the file and the field path."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, path: str, what: str, value: Any) -> NoReturn:
        raise DocumentError(f"{self.name}: {path}: expected {what}, got {_shown(value)}")

    def obj(self, value: Any, path: str, optional: bool = True) -> dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            self.fail(path, "an object", value)
        return value

    def sized(self, value: Any, path: str, zero: bool = False) -> dict[str, Any]:
        """An object keyed by token counts or stream counts ("512", "4"): the report's row names;
        `zero`: a context depth, where 0 is one (llama-bench's d0)."""
        d = self.obj(value, path)
        low = -1 if zero else 0
        for key in d:
            if not (key.isascii() and key.isdigit() and low < int(key) <= MAX_VALUE):
                self.fail(path, "depths (integers >= 0) as keys" if zero else "sizes (positive integers) as keys", key)
        return d

    def lst(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, "a list", value)
        return value

    def text(self, value: Any, path: str, optional: bool = True) -> None:
        if not (isinstance(value, str) or (optional and value is None)):
            self.fail(path, "a string", value)

    def number(self, value: Any, path: str, integer: bool = False, ranged: bool = True) -> None:
        """None, or a finite int/float (bools are not numbers); `ranged`: 0 ≤ value ≤ MAX_VALUE."""
        if value is None:
            return
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            self.fail(path, "an integer" if integer else "a number", value)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(path, "a finite number", value)
        if ranged and not 0 <= value <= MAX_VALUE:
            self.fail(path, f"{'an integer' if integer else 'a number'} from 0 to {MAX_VALUE:g}", value)

    def numbers(self, value: Any, path: str) -> None:
        for i, v in enumerate(self.lst(value, path)):
            self.number(v, f"{path}[{i}]")


def _depth_ok(value: Any, limit: int) -> bool:
    """True when `value` nests at most `limit` containers deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                return False
            children = v.values() if isinstance(v, dict) else v
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True


def _check_metrics(c: _Checker, m: dict[str, Any], path: str) -> None:
    for metric in registry.metrics():
        key, p = metric.metrics_key, f"{path}.{metric.metrics_key}"
        if key not in m:
            continue
        if metric.shape == "scalar":
            c.number(m[key], p)
        elif metric.shape == "sized":
            for size, v in c.sized(m[key], p, zero=metric.size_key == "depth_tokens").items():
                c.number(v, f"{p}.{size}")
        elif metric.shape == "grid":
            for level, entry in c.sized(m[key], p, zero=True).items():
                for size, v in c.sized(entry, f"{p}.{level}").items():
                    c.number(v, f"{p}.{level}.{size}")
        else:
            for level, entry in c.sized(m[key], p).items():
                for field in filter(None, (metric.field, metric.legacy_field)):  # older files: legacy names
                    c.number(c.obj(entry, f"{p}.{level}").get(field), f"{p}.{level}.{field}")
    for key, v in m.items():  # keys a later version adds: any JSON, but a number must be a real one
        if isinstance(v, float) and v != v:
            c.fail(f"{path}.{key}", "a finite number", v)
    c.number(m.get("model_size_bytes"), f"{path}.model_size_bytes", ranged=False)


def _check_stats(c: _Checker, stats: dict[str, Any], path: str) -> None:
    """`metrics_stats` (docs/design.md §8): {key: {n, median, mean, stdev, cv, ci95: [low, high]}}."""
    for key, entry in stats.items():
        p = f"{path}.{key}"
        st = c.obj(entry, p, optional=False)
        c.number(st.get("n"), f"{p}.n", integer=True)
        for field in ("median", "mean", "stdev", "cv"):
            c.number(st.get(field), f"{p}.{field}")
        ci = st.get("ci95")
        if ci is not None:
            if not isinstance(ci, list) or len(ci) != 2:
                c.fail(f"{p}.ci95", "[low, high]", ci)
            for i, bound in enumerate(ci):
                c.number(bound, f"{p}.ci95[{i}]", ranged=False)  # a wide interval may reach below 0
                if bound is None:
                    c.fail(f"{p}.ci95[{i}]", "a number", bound)
            if ci[0] > ci[1]:
                c.fail(f"{p}.ci95", "low <= high", ci)


def _check_run(c: _Checker, run: Any, path: str) -> None:
    r = c.obj(run, path, optional=False)
    c.text(r.get("phase", _MISSING), f"{path}.phase", optional=False)
    if not isinstance(r.get("ok", True), bool):
        c.fail(f"{path}.ok", "true or false", r.get("ok"))
    c.text(r.get("reason"), f"{path}.reason")
    valid = r.get("ok", True) is not False
    for key in INT_RUN_FIELDS:
        c.number(r.get(key), f"{path}.{key}", integer=True, ranged=valid)
    for key in NUM_RUN_FIELDS:
        c.number(r.get(key), f"{path}.{key}", ranged=valid)
    extra = c.obj(r.get("extra"), f"{path}.extra")
    c.numbers(extra.get("power_w_per_s"), f"{path}.extra.power_w_per_s")
    c.obj(r.get("server_timings"), f"{path}.server_timings")


def _check_variant(c: _Checker, variant: Any, path: str) -> None:
    v = c.obj(variant, path, optional=False)
    c.text(v.get("label", _MISSING), f"{path}.label", optional=False)
    for key in ("precision", "model"):
        c.text(v.get(key), f"{path}.{key}")
    if v.get("status", "ok") not in STATUSES:
        c.fail(f"{path}.status", " or ".join(f'"{s}"' for s in STATUSES), v.get("status"))
    for i, e in enumerate(c.lst(v.get("errors"), f"{path}.errors")):
        c.text(e, f"{path}.errors[{i}]", optional=False)
    for i, w in enumerate(c.lst(v.get("warnings"), f"{path}.warnings")):
        c.text(w, f"{path}.warnings[{i}]", optional=False)
    c.obj(v.get("validity"), f"{path}.validity")
    server = c.obj(v.get("server"), f"{path}.server")
    for key in ("kind", "version"):
        c.text(server.get(key), f"{path}.server.{key}")
    _check_metrics(c, c.obj(v.get("metrics"), f"{path}.metrics"), f"{path}.metrics")
    _check_stats(c, c.obj(v.get("metrics_stats"), f"{path}.metrics_stats"), f"{path}.metrics_stats")
    c.number(v.get("model_size_bytes"), f"{path}.model_size_bytes", ranged=False)
    c.numbers(c.obj(v.get("power_idle"), f"{path}.power_idle").get("power_w_per_s"), f"{path}.power_idle.power_w_per_s")
    for i, run in enumerate(c.lst(v.get("runs"), f"{path}.runs")):
        _check_run(c, run, f"{path}.runs[{i}]")


def _check_settings(c: _Checker, settings: dict[str, Any]) -> None:
    """`settings`: each plan setting (`precmon.core.settings`) of its kind and within the bounds
    the flags and the sweep file apply (a `repeats` of 0 was never run). An empty list is a plan
    without that part; an endpoint only needs to be a string (a later version may add one)."""
    for row in plan_settings.PLAN:
        key, value = row.name, settings.get(row.name)
        if row.kind == plan_settings.CHOICE:
            c.text(value, f"settings.{key}")
            continue
        if row.kind == plan_settings.INTS and isinstance(value, list):
            for i, v in enumerate(value):
                c.number(v, f"settings.{key}[{i}]", integer=True, ranged=False)  # the row's bounds, below
        else:  # an INTS key holding one number: checked as that number
            c.number(
                value, f"settings.{key}", integer=row.kind in (plan_settings.INT, plan_settings.INTS), ranged=False
            )
            value = [value] if row.kind == plan_settings.INTS and value is not None else value
        problem = row.problem(value) if value != [] else None
        if problem:
            raise DocumentError(f"{c.name}: settings.{key}: {problem}")


def validate(doc: Any, name: str) -> ResultsDoc:
    """Check a parsed results document; return it typed.

    Raises:
        DocumentError: one line, `<name>: <field path>: expected ..., got ...`.
    """
    c = _Checker(name)
    if not _depth_ok(doc, MAX_DEPTH):
        raise DocumentError(f"{name}: nested deeper than {MAX_DEPTH} levels: not a precmon results file")
    d = c.obj(doc, "the document", optional=False)
    if d.get("schema") != SCHEMA:
        raise DocumentError(f"{name}: not a precmon results file (schema must be {SCHEMA!r})")
    for key in ("created", "precmon_version"):
        c.text(d.get(key), key)
    host = c.obj(d.get("host"), "host")
    c.text(host.get("hostname"), "host.hostname")
    for i, g in enumerate(c.lst(host.get("gpus"), "host.gpus")):
        c.text(c.obj(g, f"host.gpus[{i}]", optional=False).get("name"), f"host.gpus[{i}].name")
    for i, p in enumerate(c.lst(host.get("power_sources"), "host.power_sources")):
        src = c.obj(p, f"host.power_sources[{i}]", optional=False)
        for key in ("id", "scope"):
            c.text(src.get(key), f"host.power_sources[{i}].{key}")
    _check_settings(c, c.obj(d.get("settings"), "settings"))
    if not isinstance(d.get("variants"), list):
        c.fail("variants", "a list", d.get("variants", _MISSING))
    for i, v in enumerate(d["variants"]):
        _check_variant(c, v, f"variants[{i}]")
    return d  # type: ignore[return-value]


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def read_json(path: Path | str) -> Any:
    """Read and strictly parse a JSON file, credentials redacted (`untrusted.redact_tree`).

    Raises:
        DocumentError: one line that starts with the file name (a folder, missing, unreadable,
            too large, not UTF-8, not strict JSON, nested too deep).
    """
    p = Path(path)
    name = visible(str(path))
    try:
        if p.is_dir():
            raise DocumentError(f"{name}: is a folder, not a results file")
        if p.stat().st_size > MAX_BYTES:
            raise DocumentError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a results file")
        with p.open("rb") as f:  # bounded: a device such as /dev/zero has size 0 and no end
            raw = f.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise DocumentError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a results file")
    except FileNotFoundError:
        raise DocumentError(f"{name}: no such file") from None
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{name}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{name}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise DocumentError(f"{name}: nested too deep: not a precmon results file") from None
    except ValueError as exc:
        raise DocumentError(f"{name}: not strict JSON: {visible(str(exc), limit=80)}") from None
    # a file written before precmon redacted credentials shows none either (untrusted.redact_tree)
    return redact_tree(doc)


def load_document(path: Path | str) -> ResultsDoc:
    """Read, parse and validate a results file: the one way the report and compare load one.

    Raises:
        DocumentError: one line that starts with the file name (a folder, missing, unreadable,
            not UTF-8, not strict JSON, too deep, or a field of the wrong type or range).
    """
    return validate(read_json(path), visible(str(path)))
