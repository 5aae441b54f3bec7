"""The sweep file (docs/design.md §6): TOML → dataclasses, strictly validated.

Every error names the file, the line and the key, in one line: a user with a 40-line sweep file
and a typo deserves better than a traceback. tomllib gives no positions, so `Locator` maps
(table, index, key) back to lines by reading the text once.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precmon.core import settings as plan
from precmon.core.settings import BenchSettings
from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.settings import QualitySettings, QualityTextError, with_rows
from precmon.servers.kinds import KIND_NAMES
from precmon.sweep.argv_flags import LLAMA_KV_DEFAULT, kv_mismatch, launched_kv
from precmon.sweep.labels import look_alike
from precmon.sweep.spec_rules import check_sweep
from precmon.sweep.toml_lines import Locator

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

# key → (types, description). The plan and quality keys come from the plan-settings table
# (precmon.core.settings); they may appear in [defaults] and in each [[variant]].
BENCH_KEYS: dict[str, tuple[tuple[type, ...], str]] = {s.name: (s.toml_types(), s.type_words()) for s in plan.PLAN}
QUALITY_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    s.name: (s.toml_types(), s.type_words()) for s in plan.QUALITY if s.sweep
}
COMMON_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "url": ((str,), "URL string"),
    "model": ((str,), "string"),
    "server": ((str,), "server kind string"),
    "api_key_env": ((str,), "environment variable name"),
    "ready_timeout_s": ((int, float), "number of seconds"),
}
VARIANT_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "label": ((str,), "string"),
    "precision": ((str,), "string"),
    "launch": ((list,), "list of strings (argv, run without a shell)"),
    "env": ((dict,), "table of strings"),
    "kv_cache_dtype": ((str,), 'KV cache type string ("f16", "q8_0", "q4_0", "fp8", ...)'),
}
KV_CACHE_DTYPE = re.compile(r"^[A-Za-z0-9_]{1,16}$")
# Keys of the sweep as a whole: [defaults] only (a per-variant cooldown_s used to be accepted and
# silently ignored); how the results are judged (`max_kld`) is the settings table's REPORT rows.
SWEEP_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "order": ((str,), '"sequential" or "interleaved"'),
    "cooldown_s": ((int, float), "number of seconds"),
    "baseline": ((str,), "label of a variant"),
    "power_from": ((list,), "list of exporter URLs (other nodes' power: docs/design.md §8 Fleet)"),
    **{s.name: (s.toml_types(), s.type_words()) for s in plan.REPORT},
}
ORDERS = ("sequential", "interleaved")
DEFAULT_KEYS = {**BENCH_KEYS, **COMMON_KEYS, **QUALITY_KEYS, **SWEEP_KEYS}
ALL_VARIANT_KEYS = {**BENCH_KEYS, **COMMON_KEYS, **QUALITY_KEYS, **VARIANT_KEYS}
SERVER_KINDS = ("auto", *KIND_NAMES)  # the registry: precmon.servers.kinds


class SpecError(ValueError):
    """A sweep file is invalid; str() is the one-line message."""


@dataclass
class Variant:
    label: str  # "" only for a bench: the server names it (measure/plan.py variant_label)
    precision: str
    url: str
    model: str | None = None
    launch: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    server: str = "auto"
    api_key_env: str | None = None
    ready_timeout_s: float = 900.0
    settings: BenchSettings = field(default_factory=BenchSettings)
    quality: QualitySettings | None = None  # None: quality scoring off for this variant
    kv_cache_dtype: str | None = None  # declared; checked against the launch argv and the server
    server_log: Path | None = None  # the server's output where precmon knows it unlaunched (the demo)
    server_binary: Path | None = None  # its executable, likewise (a launched one's is launch[0])
    api_key: str | None = field(default=None, repr=False)  # a key the front end holds (the TUI's), never written

    @property
    def strategy(self) -> str:
        return "launch" if self.launch else ("model" if self.model else "url")


@dataclass
class SweepSpec:
    path: Path | None
    variants: list[Variant]
    cooldown_s: float = 30.0
    settings: BenchSettings = field(default_factory=BenchSettings)
    order: str = "sequential"  # or "interleaved" (sweep/interleave.py)
    baseline: str | None = None  # [defaults] baseline: the quality reference (None: the first variant)
    quality: QualitySettings = field(default_factory=QualitySettings)  # [defaults]' quality settings
    report: dict[str, Any] = field(default_factory=dict)  # how the results are judged (max_kld), when given
    power_from: list[str] = field(default_factory=list)  # other nodes' exporters (power/remote/)

    @property
    def baseline_label(self) -> str:
        """The variant quality is scored against: `baseline`, else the first variant."""
        return self.baseline or self.variants[0].label

    @property
    def scores_quality(self) -> bool:
        return any(v.quality is not None for v in self.variants)

    def settings_dict(self) -> dict[str, Any]:
        """`settings` of the results file; `order` appears only when it is not the default, the
        report settings (`max_kld`) only when given (the sweep file's, or a flag's)."""
        d = self.settings.to_dict()
        if self.order != "sequential":
            d["order"] = self.order
        return d | plan.report_values(self.report)


def _check_type(value: Any, types: tuple[type, ...], key: str) -> str | None:
    row = plan.BY_NAME.get(key)
    if row is not None:  # a plan or quality setting: the table's type and bounds
        return row.type_problem(value) or row.problem(value)
    if types == (bool,):
        return None if isinstance(value, bool) else f"expected true or false, got {type(value).__name__} {value!r}"
    if isinstance(value, bool) or not isinstance(value, types):
        return f"expected {({**ALL_VARIANT_KEYS, **SWEEP_KEYS})[key][1]}, got {type(value).__name__} {value!r}"
    return _check_value(value, key)


def _check_value(value: Any, key: str) -> str | None:
    """The rules beyond the type (which `_check_type` checked) of the keys outside the table."""
    if key == "launch" and (not value or any(not isinstance(v, str) for v in value)):
        return f"expected a non-empty list of strings, got {value!r}"
    if key == "env" and any(not isinstance(v, str) for v in value.values()):
        return "expected a table of strings"
    if key == "kv_cache_dtype" and not KV_CACHE_DTYPE.match(value):
        return f"expected a KV cache type like f16, q8_0, q4_0 or fp8, got {value!r}"
    if key == "order" and value not in ORDERS:
        return f'expected "sequential" or "interleaved", got {value!r}'
    if key == "server" and value not in SERVER_KINDS:
        return f"expected one of {', '.join(SERVER_KINDS)}, got {value!r}"
    if key == "url" and not re.match(r"^https?://", value):
        return f"expected an http:// or https:// URL, got {value!r}"
    if key == "power_from" and not all(isinstance(u, str) and re.match(r"^https?://\S+$", u) for u in value):
        return f"expected a list of http:// or https:// URLs, got {value!r}"
    return plan.value_problem(key, value)  # ready_timeout_s, cooldown_s: the seconds rule


def _apply_bench(settings: BenchSettings, table: dict[str, Any]) -> BenchSettings:
    s = BenchSettings(**settings.to_dict())
    for row in plan.PLAN:
        if row.name in table:
            value = table[row.name]
            setattr(s, row.name, list(value) if isinstance(value, list) else value)
    return s


ErrFn = Callable[[str, int, "str | None", str], SpecError]


def parse_spec(text: str, path: Path | None = None, base: BenchSettings | None = None) -> SweepSpec:
    """Parse and validate sweep TOML text; raises SpecError naming file, line and key."""
    name = str(path) if path else "<sweep>"
    loc = Locator(text)

    def err(table: str, index: int, key: str | None, msg: str) -> SpecError:
        line = loc.line(table, index, key)
        where = f"{name}:{line}" if line else name
        what = f"[{table}]" if table == "defaults" else f"variant #{index + 1}"
        return SpecError(f"{where}: {what}" + (f" key '{key}'" if key else "") + f": {msg}")

    doc = _read_toml(text, name, loc)
    defaults: dict[str, Any] = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise SpecError(f"{name}: 'defaults' must be a table")
    for key, value in defaults.items():
        _check_key("defaults", 0, key, value, DEFAULT_KEYS, err)
    variants_raw = doc.get("variant")
    if not isinstance(variants_raw, list) or not variants_raw:
        raise SpecError(f"{name}: no [[variant]] tables: a sweep needs at least one variant")
    settings = _apply_bench(base or BenchSettings(), defaults)
    base_quality = _quality(QualitySettings(), defaults, path, lambda key, msg: err("defaults", 0, key, msg))
    variants: list[Variant] = []
    for i, raw in enumerate(variants_raw):
        if not isinstance(raw, dict):
            raise SpecError(f"{name}: 'variant' must be [[variant]] tables, got {type(raw).__name__} {raw!r}")
        variants.append(_variant(i, raw, defaults, settings, base_quality, path, {v.label for v in variants}, err))
    order = str(defaults.get("order", "sequential"))
    baseline = defaults.get("baseline")
    check_sweep(variants, variants_raw, defaults, base_quality, err)
    return SweepSpec(
        path=path,
        variants=variants,
        cooldown_s=float(defaults.get("cooldown_s", 30.0)),
        settings=settings,
        order=order,
        baseline=baseline,
        quality=base_quality,
        report=plan.report_values(defaults),
        power_from=list(defaults.get("power_from", [])),
    )


def _read_toml(text: str, name: str, loc: Locator) -> dict[str, Any]:
    """The TOML document, with only [defaults] and [[variant]] at the top."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{name}: not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib recurses per nesting level: `a = [[[[...]]]]` exhausts the stack
        raise SpecError(f"{name}: nested too deeply to be a sweep file") from None
    for key in doc:
        if key not in ("defaults", "variant"):
            raise SpecError(
                f"{name}:{loc.line(key, 0, None) or loc.line('', 0, key) or '?'}: unknown top-level "
                f"key '{key}' (expected [defaults] and [[variant]] tables)"
            )
    return doc


def _check_key(table: str, index: int, key: str, value: Any, allowed: dict[str, Any], err: ErrFn) -> None:
    """One key of [defaults] or a [[variant]]: known here, of its type, within its bounds."""
    if table == "variant" and key in SWEEP_KEYS:
        raise err(table, index, key, "belongs in [defaults] (it is a setting of the whole sweep)")
    if table == "defaults" and key in VARIANT_KEYS:
        raise err(table, index, key, "belongs in a [[variant]] (each variant has its own)")
    if key not in allowed:
        hint = difflib.get_close_matches(key, list(allowed), n=1)
        raise err(table, index, key, "unknown key" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    problem = _check_type(value, allowed[key][0], key)
    if problem:
        raise err(table, index, key, problem)


def _variant(
    i: int,
    raw: dict[str, Any],
    defaults: dict[str, Any],
    settings: BenchSettings,
    base_quality: QualitySettings,
    path: Path | None,
    labels: set[str],
    err: ErrFn,
) -> Variant:
    """The i-th [[variant]], checked, over [defaults]."""
    for key, value in raw.items():
        _check_key("variant", i, key, value, ALL_VARIANT_KEYS, err)
    for req in ("label", "precision"):
        if req not in raw:
            raise err("variant", i, None, f"missing required key '{req}'")
    if not raw["label"].strip():  # the label names the variant in results and on --resume
        raise err("variant", i, "label", "expected a non-empty label")
    if raw["label"] in labels:
        raise err("variant", i, "label", f"duplicate label {raw['label']!r}")
    if problem := look_alike(raw["label"], labels):
        raise err("variant", i, "label", problem)
    url = raw.get("url") or defaults.get("url")
    if not any(k in raw for k in ("model", "url", "launch")) and "model" not in defaults:
        raise err("variant", i, None, "needs one of 'model', 'url' or 'launch'")
    if "launch" in raw and "url" not in raw:
        raise err("variant", i, "launch", "a launched server needs its own 'url' (where it will listen)")
    if not url:
        raise err("variant", i, None, "no 'url' here and none in [defaults]")
    kv = raw.get("kv_cache_dtype")
    launched = kv_mismatch(kv, launched_kv(raw["launch"])) if kv and "launch" in raw else None
    if launched:
        raise err(
            "variant",
            i,
            "kv_cache_dtype",
            f"{raw['label']!r} declares {kv} but its launch argv sets KV cache "
            f"{launched} (llama-server: -ctk/-ctv, default {LLAMA_KV_DEFAULT}; "
            "vLLM: --kv-cache-dtype)",
        )
    scored = raw.get("quality", defaults.get("quality", False))
    return Variant(
        label=raw["label"],
        precision=raw["precision"],
        url=url,
        model=raw.get("model") or (defaults.get("model") if "launch" not in raw and "url" not in raw else None),
        launch=raw.get("launch"),
        env=dict(raw.get("env", {})),
        server=_pick(raw, defaults, "server", "auto"),
        api_key_env=raw.get("api_key_env", defaults.get("api_key_env")),
        ready_timeout_s=float(_pick(raw, defaults, "ready_timeout_s", 900.0)),
        settings=_apply_bench(settings, raw),
        quality=_quality(base_quality, raw, path, lambda key, msg: err("variant", i, key, msg)) if scored else None,
        kv_cache_dtype=kv,
    )


def _quality(base: QualitySettings, table: dict[str, Any], path: Path | None, err: Any) -> QualitySettings:
    """`base` with this table's quality keys applied (`quality.settings.with_rows`); `quality_text` is
    read now (relative to the sweep file's folder), so a missing file is a SpecError before
    anything is measured."""
    try:
        return with_rows(base, table, path.parent if path is not None else None)
    except QualityTextError as exc:
        raise err("quality_text", str(exc)) from None


def _pick(raw: dict[str, Any], defaults: dict[str, Any], key: str, fallback: Any) -> Any:
    """A variant's own value of `key`, else [defaults]' value, else `fallback` (all validated)."""
    return raw[key] if key in raw else defaults.get(key, fallback)


MAX_SPEC_BYTES = 16 * 2**20  # a sweep file is a few kilobytes; more is not one


def load_spec(path: Path, base: BenchSettings | None = None) -> SweepSpec:
    path = Path(path)
    try:
        with open_file_arg(path) as f:  # bounded: a device such as /dev/zero has no end
            data = f.read(MAX_SPEC_BYTES + 1)
        if len(data) > MAX_SPEC_BYTES:
            raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES // 2**20} MiB: not a sweep file")
        text = data.decode("utf-8")
    except FileNotFoundError as exc:
        raise SpecError(f"{path}: no such file") from exc
    except FileArgError as exc:
        raise SpecError(f"{path}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read: {exc}") from exc
    return parse_spec(text, path, base)
