"""`host.fingerprint` of a results file (docs/design.md §5): what the numbers were measured on.

A 10% difference between two files is only news if the machines are the same; `precmon compare`
lists where their fingerprints differ. The fingerprint holds the host facts of
`power.inventory` (CPU model and governor, GPU names, driver, power limits), the power sources
with their sampling rate and method, and the idle baseline (filled in when the document is
written, from the first variant that measured idle power). Its `id` is a short hash of the
parts that do not change between runs of one machine (hostname, machine-id, CPU model, GPU
names, driver), so two hosts both called "vm" get different ids; governor and power limit are
settings, not identity, and stay out of the hash.

`machine_id` is the one fact that says "same box" across driver updates and renames: an
HMAC-SHA256 of systemd's machine-id (else of the sorted NVML GPU UUIDs) keyed by a fixed
precmon string, as systemd's own `sd_id128_get_machine_app_specific` does, so the raw id, which
systemd asks not to publish, never leaves the host and cannot be matched against other tools'.
`precmon compare` uses it to tell apart two files whose hostname is the same ("vm#3fa2").
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
from collections.abc import Sequence
from typing import Any

from precmon.core.schema import VariantResult
from precmon.power.base import EnergyMeter
from precmon.power.inventory import Inventory, read_inventory

ID_CHARS = 12
MACHINE_ID_CHARS = 16
MACHINE_ID_KEY = b"precmon.machine_id/1"  # the salt: a precmon machine id matches no other tool's


def fingerprint_id(parts: dict[str, Any]) -> str:
    """The first ID_CHARS hex digits of SHA-256 over `parts` (sorted keys, one line each)."""
    text = "\n".join(f"{k}={parts[k]}" for k in sorted(parts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_CHARS]


def machine_id(inv: Inventory) -> tuple[str | None, str | None]:
    """(short salted hash, what it was made from: "machine-id" | "gpu-uuid"), or (None, None)."""
    if inv.machine_id:
        raw, source = inv.machine_id, "machine-id"
    elif inv.gpu_uuids:
        raw, source = ",".join(sorted(inv.gpu_uuids)), "gpu-uuid"
    else:
        return None, None
    digest = hmac.new(MACHINE_ID_KEY, raw.encode("utf-8"), hashlib.sha256).hexdigest()
    return digest[:MACHINE_ID_CHARS], source


def power_sources(meter: EnergyMeter | None) -> list[dict[str, Any]]:
    """The meter's channels with watts: id, kind, scope, method (counter | integrated), rate_hz."""
    if meter is None:
        return []
    rate = getattr(meter, "rate_hz", None)  # PowerSampler's; a meter without one leaves it null
    rate_hz = float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None
    return [
        {k: src.get(k) for k in ("id", "kind", "scope", "method")} | {"rate_hz": rate_hz}
        for src in meter.power_sources_info()
    ]


def host_fingerprint(meter: EnergyMeter | None = None, nvml: Any = None) -> dict[str, Any]:
    """The fingerprint of this host now; every fact optional (None, with why in `reasons`)."""
    inv = read_inventory(nvml)
    hostname = socket.gethostname() or None
    gpu_names = [g.get("name") for g in inv.gpus]
    stable: dict[str, Any] = {
        "hostname": hostname,
        "machine_id": inv.machine_id,
        "cpu_model": inv.cpu_model,
        "gpu_names": ",".join(str(n) for n in gpu_names) if gpu_names else None,
        "driver_version": inv.driver_version,
    }
    present = {k: v for k, v in stable.items() if v is not None}
    sources = power_sources(meter)
    reasons = dict(inv.reasons)
    mid, mid_from = machine_id(inv)
    if mid is None:
        reasons["machine_id"] = "no readable machine-id and no NVML GPU UUID"
    else:
        reasons.pop("machine_id", None)
    if meter is None:
        reasons["power_sources"] = "no power meter"
    return {
        "id": fingerprint_id(present),
        "id_from": sorted(present),
        "hostname": hostname,
        "machine_id": mid,
        "machine_id_from": mid_from,
        "cpu_model": inv.cpu_model,
        "cpu_governor": inv.cpu_governor,
        "cpu_count": os.cpu_count(),
        "gpus": inv.gpus,
        "driver_version": inv.driver_version,
        "power_sources": sources,
        "idle_baseline": None,
        "reasons": reasons,
    }


def with_idle_baseline(fp: Any, variants: Sequence[VariantResult]) -> Any:
    """The fingerprint `fp` with `idle_baseline` from the first variant that measured idle power.

    The fingerprint is made before anything is measured; the idle baseline exists only after a
    variant's idle phase, so it is filled in each time the document is written. A fingerprint that
    has one already (a file read back) keeps it.
    """
    if not isinstance(fp, dict) or fp.get("idle_baseline") is not None:
        return fp
    for v in variants:
        watts = v.power_idle.power_w if v.power_idle is not None else None
        if isinstance(watts, (int, float)) and not isinstance(watts, bool):
            assert v.power_idle is not None
            return fp | {"idle_baseline": {"power_w": watts, "channel": v.power_idle.channel, "variant": v.label}}
    before = fp.get("reasons")
    reasons: dict[str, Any] = dict(before) if isinstance(before, dict) else {}
    reasons["idle_baseline"] = "no idle power measured"
    return fp | {"reasons": reasons}
