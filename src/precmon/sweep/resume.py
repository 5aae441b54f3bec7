"""`--resume` checks it is the same job before it adds anything (docs/design.md §6 "Resume").

A resumed sweep used to keep the old variants' runs under a changed plan (another `output_tokens`,
another prompt size, a variant whose label stayed but whose launch or model changed) while
`results.json`'s `settings` claimed the new one, and the table showed ratios between the two. So
each variant keeps the plan that measured it (`VariantResult.plan`: its settings and what it ran),
and a resume compares it with the sweep file's: a change is refused, naming the keys, unless
`--replan` asks to measure again what the change touches. Files written before variants kept
their plan are compared on what they hold: the document's `settings`, each variant's precision,
launch and KV cache type.

A variant whose quality could not be scored for want of a baseline (`quality.reference` is
"missing") is not done: once the baseline is measured, resuming measures it again, with quality.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.core import settings as table
from precmon.core.schema import Host, ServerInfo, VariantResult
from precmon.sweep.quality_step import MISSING_REFERENCE
from precmon.sweep.spec import SweepSpec, Variant
from precmon.sweep.store import ResultStore
from precmon.untrusted import redact_argv, redact_url

#: Plan settings that do not change what is measured, only when a request is given up.
NOT_PLAN = frozenset({"timeout_s"})
#: Flags of a launch argv that say only where the launched server listens: their values are no
#: part of the plan (a sweep file made with free ports gets other ports each time).
ADDRESS_FLAGS = ("--port", "--host", "-p")


class PlanChanged(ValueError):
    """The folder's results were measured with another plan; str() is the one line that says how."""


@dataclass(frozen=True)
class Change:
    label: str
    key: str
    old: Any
    new: Any

    def words(self) -> str:
        return f"{self.key} {_shown(self.old)} → {_shown(self.new)}"


def _shown(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value, ensure_ascii=False)[:80]


def _settings(s: table.BenchSettings | dict[str, Any]) -> dict[str, Any]:
    d = s.to_dict() if isinstance(s, table.BenchSettings) else s
    names = {row.name for row in table.PLAN} - NOT_PLAN
    return {k: v for k, v in d.items() if k in names}


def launch_key(argv: Any) -> list[str] | None:
    """A launch argv as the plan compares it: redacted, the listening address's values as "*"."""
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return None
    out: list[str] = []
    hide = False
    for arg in redact_argv(list(argv)):
        flag, eq, _ = arg.partition("=")
        out.append("*" if hide else (f"{flag}=*" if eq and flag in ADDRESS_FLAGS else arg))
        hide = not hide and not eq and arg in ADDRESS_FLAGS
    return out


def variant_plan(v: Variant, spec: SweepSpec) -> dict[str, Any]:
    """What measured variant `v`: its settings, server, model, precision, launch (redacted), KV cache
    type, environment (a digest: it may hold keys) and quality settings, as `VariantResult.plan`."""
    quality = None
    if v.quality is not None:
        q = v.quality
        text = hashlib.sha256(q.text.encode("utf-8")).hexdigest()
        quality = {"baseline": spec.baseline_label, "positions": q.positions, "top_k": q.top_k, "text_sha256": text}
    plan: dict[str, Any] = {
        "settings": _settings(v.settings),
        "url": None if v.launch else redact_url(v.url),  # a launched server's address is no part of it
        "server": v.server,
        "model": v.model,
        "precision": v.precision,
        "launch": launch_key(v.launch),
        "kv_cache_dtype": v.kv_cache_dtype,
        "env_sha256": hashlib.sha256(json.dumps(v.env, sort_keys=True).encode()).hexdigest() if v.env else None,
        "quality": quality,
    }
    return {k: x for k, x in plan.items() if x is not None}


def _legacy_plan(r: VariantResult, old_settings: dict[str, Any] | None) -> dict[str, Any]:
    """What a file written before `plan` holds of it: compared only on these keys."""
    plan: dict[str, Any] = {
        "precision": r.precision,
        "launch": launch_key(r.launch),
        "kv_cache_dtype": r.kv_cache_dtype,
    }
    if old_settings:
        plan["settings"] = _settings(old_settings)
    return {k: x for k, x in plan.items() if x is not None}


def _diff(label: str, old: dict[str, Any], new: dict[str, Any], keys: set[str]) -> list[Change]:
    out: list[Change] = []
    for key in sorted(keys):
        a, b = old.get(key), new.get(key)
        if key in ("settings", "quality") and isinstance(a, dict) and isinstance(b, dict):
            out += [Change(label, k, a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
        elif a != b:
            out.append(Change(label, key, a, b))
    return out


def changes(spec: SweepSpec, kept: list[VariantResult], old_settings: dict[str, Any] | None) -> list[Change]:
    """How the plan of each kept variant differs from the sweep file's now: every key of a stored
    plan; for an older record the keys it holds. A variant no longer in the file is touched only
    by a change of the sweep's settings."""
    planned = {v.label: v for v in spec.variants}
    out: list[Change] = []
    for r in kept:
        old = r.plan if isinstance(r.plan, dict) else _legacy_plan(r, old_settings)
        v = planned.get(r.label)
        if v is None:
            new = {"settings": _settings(spec.settings)}
            out += _diff(r.label, old, new, {"settings"} & old.keys())
            continue
        new = variant_plan(v, spec)
        out += _diff(r.label, old, new, old.keys() | new.keys() if isinstance(r.plan, dict) else set(old))
    return out


def _missing_reference(r: VariantResult) -> bool:
    q = r.quality
    if q is None:
        return False
    older = q.reason is not None and q.reason.startswith("no reference from the baseline")  # said only in words
    return q.reference == MISSING_REFERENCE or older


def refusal(results: str, found: list[Change], replan: bool, unplanned: set[str]) -> str:
    """The one line: what changed, grouped by change, and the way on."""
    grouped: dict[str, list[str]] = {}
    for c in found:
        grouped.setdefault(c.words(), []).append(c.label)
    what = "; ".join(f"{w} ({', '.join(labels)})" for w, labels in grouped.items())
    if replan:
        gone = ", ".join(sorted(unplanned))
        return (
            f"--resume --replan: {gone} measured with another plan ({what}) but no longer in the sweep file, "
            "so it cannot be measured again: put it back in the file, or choose another --out"
        )
    return (
        f"--resume: the plan changed since {results} was measured: {what}; "
        "--resume --replan measures again what the change touches, or choose another --out"
    )


def resume(spec: SweepSpec, store: ResultStore, replan: bool, log: Callable[[str], None]) -> set[str]:
    """Read the folder back and return the labels that are done (not measured again).

    Raises:
        PlanChanged: a kept variant's plan differs (without `replan`), or one that `replan` would
            have to measure again is no longer in the sweep file.
    """
    planned = {v.label: v for v in spec.variants}
    existing = store.load_existing()
    for v in existing:
        p = planned.get(v.label)
        if p is not None and v.precision is None:  # recovered from journal runs alone
            v.precision = p.precision
            if v.server == ServerInfo():
                v.server = ServerInfo(kind=p.server, url=p.url)
            store.amend(v)
    kept = [v for v in existing if v.status == "ok" or v.label not in planned]
    found = changes(spec, kept, store.previous_settings)
    touched = {c.label for c in found}
    if found and (not replan or touched - planned.keys()):
        raise PlanChanged(refusal(str(store.results_path), found, replan, touched - planned.keys()))
    baseline = spec.baseline_label
    if spec.scores_quality and baseline in touched:  # a new reference: every score against the old one goes
        touched |= {label for label, v in planned.items() if v.quality is not None}
    done = {v.label for v in kept if v.label in planned and v.label not in touched}
    waiting = {v.label for v in kept if v.label in done and planned[v.label].quality and _missing_reference(v)}
    if waiting:
        log(f"resuming: {', '.join(sorted(waiting))} had no quality reference: measured again, with quality")
    if touched:
        log(f"resuming with --replan: {', '.join(sorted(touched))} measured again under the sweep file's plan")
    done -= waiting
    if done:
        log(f"resuming: {', '.join(sorted(done))} already measured, skipped")
    return done


def resume_problem(spec: SweepSpec, out_dir: Path, replan: bool) -> str | None:
    """The line `resume` would refuse with, read off the folder without writing to it (the
    commands ask before they open a power meter; the runner's `resume` stays the guarantee)."""
    try:
        resume(spec, ResultStore(out_dir, {}, Host()), replan, lambda text: None)
    except PlanChanged as exc:
        return str(exc)
    return None
