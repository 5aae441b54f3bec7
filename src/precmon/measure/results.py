"""The results document, schema `precmon.results/1` (docs/design.md §5).

Plain dicts on disk, small dataclasses in memory. Keys are never renamed; later versions may
add keys, so readers ignore what they do not know.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from precmon.measure.registry import empty_metrics
from precmon.power.base import EnergyMeter
from precmon.untrusted import redact_tree

SCHEMA = "precmon.results/1"


@dataclass
class Run:
    """One measured request (or one concurrency level) of a variant."""

    phase: str  # "decode" | "prefill" | "ttft" | "warmup" | "concurrency" | "long_context_decode"
    prompt_tokens: int | None
    output_tokens: int | None
    ttft_s: float | None = None
    decode_tok_s: float | None = None
    prefill_ms_per_token: float | None = None
    itl_ms_p50: float | None = None
    itl_ms_p99: float | None = None
    power_w: float | None = None
    energy_j: float | None = None
    cached_tokens: int | None = None
    server_timings: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    reason: str | None = None  # why the run is invalid (excluded from medians)
    target_prompt_tokens: int | None = None
    repeat: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: v for k, v in d.items() if v is not None and v != {}} | {"ok": self.ok}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Run:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class VariantResult:
    """Everything measured for one precision variant."""

    label: str
    precision: str | None
    model: str | None
    server: dict[str, Any]
    status: str = "ok"  # ok | partial | failed
    errors: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=empty_metrics)
    runs: list[Run] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # power windows, model info, concurrency...

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "label": self.label,
            "precision": self.precision,
            "model": self.model,
            "server": self.server,
            "status": self.status,
            "errors": list(self.errors),
            "metrics": self.metrics,
            "runs": [r.to_dict() for r in self.runs],
        }
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VariantResult:
        base = {"label", "precision", "model", "server", "status", "errors", "metrics", "runs"}
        metrics = empty_metrics() | dict(d.get("metrics") or {})
        return cls(
            label=d["label"],
            precision=d.get("precision"),
            model=d.get("model"),
            server=d.get("server") or {},
            status=d.get("status", "ok"),
            errors=list(d.get("errors") or []),
            metrics=metrics,
            runs=[Run.from_dict(r) for r in d.get("runs") or []],
            extra={k: v for k, v in d.items() if k not in base},
        )


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def host_info(
    power_sources: list[dict[str, Any]] | None = None, gpus: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "gpus": gpus or [],
        "power_sources": power_sources or [],
    }


def host_from_meter(meter: EnergyMeter | None) -> dict[str, Any]:
    """`host` of a results file from a power meter: GPUs (named by NVML) and the sources measured."""
    if meter is None:
        return host_info([], [])
    gpus = [{"name": c.label, "id": c.id} for c in meter.channels() if c.kind == "nvml"]
    sources = meter.power_sources_info()
    return host_info(sources, gpus)


def results_document(
    variants: list[VariantResult],
    settings: dict[str, Any],
    host: dict[str, Any] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    from precmon import __version__

    doc = {
        "schema": SCHEMA,
        "created": created or utc_now_iso(),
        "precmon_version": __version__,
        "host": host or host_info(),
        "settings": settings,
        "variants": [v.to_dict() for v in variants],
    }
    # The last line of defence: a URL's password, a launch argv's --api-key, an Authorization
    # header echoed in an error body never reach a file or a screen (issue 11 #15).
    return cast(dict[str, Any], redact_tree(doc))


def write_json_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write JSON so that a crash mid-write never leaves a truncated file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ResultsError(ValueError):
    """A results file is not a precmon results document."""


def load_results(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not a precmon results file (schema must be {SCHEMA!r})")
    return doc


def decode_energy_per_token(energy_j: Any, output_tokens: Any, extra: dict[str, Any] | None) -> float | None:
    """J/token of one decode run: its energy ÷ the tokens decoded in its window.

    A window cut at the first token (`extra["energy_tokens"]`, see `decode_window.cut_prefill`) holds the
    tokens after the first; an uncut one (older results, or no sampled watts) all output tokens.
    """
    tokens = (extra or {}).get("energy_tokens", output_tokens)
    if not isinstance(energy_j, (int, float)) or not isinstance(tokens, int) or tokens <= 0:
        return None
    return energy_j / tokens
