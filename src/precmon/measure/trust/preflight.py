"""Is this box fit to measure? The checks made before a bench or sweep starts (docs/design.md §4
"Preflight"), and in `precmon doctor`.

A box with a lowered power limit, a GPU throttled at idle, another job on the GPU, a CPU pinned
to its lowest clock or memory paged out measures like a slow precision: every variant is slow
alike, and the results would be published as the precisions' numbers. Each check turns the facts
`power/box.py` read into at most one finding per cause: a line starting with its code, saying what
was found and what to do. A fact that could not be read is no finding (a container without /sys,
a CPU box without NVML): its check says `n/a` and why. A healthy box gives no finding at all.

The findings are shown before the measurement starts (the TUI's dialog, the headless lines,
`--strict`'s exit 2) and kept in every variant's `warnings` and in `host.preflight`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psutil

from precmon.core.schema import Preflight
from precmon.power import cpu
from precmon.power.box import BoxFacts, NvmlGpu, hugepages_free_bytes, read_box
from precmon.power.gpu import slowdown_reasons
from precmon.power.spark import layout

CAPPED, SAFE_MODE, CLOCKS_HELD, GPU_BUSY = "power-capped:", "safe-mode:", "clocks-held:", "gpu-busy:"
POWERSAVE, SWAP_USED, HUGEPAGES = "cpu-powersave:", "swap-used:", "hugepages:"
CODES = (CAPPED, SAFE_MODE, CLOCKS_HELD, GPU_BUSY, POWERSAVE, SWAP_USED, HUGEPAGES)

# A limit this far under its reference is a cap, not the firmware's rounding: spbm caps are whole
# milliwatts and NVML limits whole watts, so a healthy box reads its reference exactly; 10% leaves
# room for a firmware that sets PL2 a few watts off its documented default.
CAP_SHARE = 0.90
# DGX Spark owners report a safety mode that holds the box near 30 W (a power-delivery fault, or a
# low-power state that survives reboots until AC is unplugged); no healthy controller is capped
# that low (the EC's lowest default is PL1's 140 W).
SAFE_MODE_CAP_W = 35.0
# A slowdown reason in this many of the REASON_READS idle reads: an idle GPU has none, and one
# read alone could catch a transient power-brake blip.
REASON_READS_MIN = 2
# Swap in use: a few hundred MiB of long-idle pages is common on a healthy desktop; a GiB and more
# says memory ran short, and a server's pages may be among those paged out.
SWAP_USED_MIN_BYTES = 2**30
# Free HugePages: memory MemAvailable does not count. Under a GiB is a rounding on a 128 GB box.
HUGEPAGES_FREE_MIN_BYTES = 2**30
# cpufreq drivers whose `powersave` is a dynamic policy (the hardware picks the clock), not the
# lowest clock: intel_pstate and amd-pstate-epp in their active mode.
DYNAMIC_POWERSAVE = ("intel_pstate", "amd-pstate-epp")
GIB = 2**30
OK = "ok"


def _spbm(facts: BoxFacts) -> tuple[list[str], dict[str, str]]:
    """power-capped: / safe-mode: from the spbm controllers' caps."""
    if not facts.spbm_present:
        return [], {"spbm_limits": "n/a: no spbm driver (a DGX Spark with antheas/spark_hwmon has one)"}
    if not facts.spbm:
        return [], {"spbm_limits": "n/a: the spbm driver shows no power caps"}
    found, safe = [], []
    for lim in facts.spbm:
        default = layout.EC_DEFAULT_W.get(lim.controller)
        refs = [r for r in (default, lim.max_w) if r]
        if not refs:
            continue
        ref = min(refs)
        if lim.cap_w < CAP_SHARE * ref:
            of = f"its EC default {default:.0f} W" if default and ref == default else f"its maximum {ref:.0f} W"
            ceiling = f", maximum {lim.max_w:.0f} W" if lim.max_w and ref != lim.max_w else ""
            found.append(
                f"{CAPPED} spbm {lim.device} {lim.controller} capped at {lim.cap_w:.0f} W, below {of}{ceiling}: "
                f"every variant would run capped; `echo 0 | sudo tee {lim.cap_file}` restores the default"
            )
        if lim.cap_w <= SAFE_MODE_CAP_W:
            safe.append(f"{lim.controller} {lim.cap_w:.0f} W")
    if safe:
        found.append(
            f"{SAFE_MODE} the DGX Spark's safety-mode signature ({', '.join(safe)}): owners report it after a "
            "power-delivery fault; unplug AC for a minute (the state can survive reboots), use the original "
            "240 W supply, and if it stays, the unit needs service"
        )
    return found, {"spbm_limits": CAPPED if found else OK}


def _limit(g: NvmlGpu) -> str | None:
    if g.enforced_limit_w is None or g.default_limit_w is None:
        return None
    if g.enforced_limit_w >= CAP_SHARE * g.default_limit_w:
        return None
    return (
        f"{CAPPED} GPU {g.index} ({g.name}) power limit {g.enforced_limit_w:.0f} W, below its default "
        f"{g.default_limit_w:.0f} W: every variant would run capped. "
        f"`sudo nvidia-smi -i {g.index} -pl {g.default_limit_w:.0f}` restores it"
    )


def _clocks(g: NvmlGpu) -> str | None:
    counts: dict[str, int] = {}
    for mask in g.reasons:
        for name in slowdown_reasons(mask):
            counts[name] = counts.get(name, 0) + 1
    held = [n for n, c in counts.items() if c >= min(REASON_READS_MIN, len(g.reasons))]
    if held:
        return (
            f"{CLOCKS_HELD} GPU {g.index} ({g.name}) held back at idle ({', '.join(held)}): it would be slower "
            "under load too; check cooling and power (`nvidia-smi -q -d PERFORMANCE`)"
        )
    app, default = g.app_clock_mhz, g.default_app_clock_mhz
    if app is not None and default is not None and app < CAP_SHARE * default:
        return (
            f"{CLOCKS_HELD} GPU {g.index} ({g.name}) application clock {app:.0f} MHz, below its default "
            f"{default:.0f} MHz: `sudo nvidia-smi -i {g.index} -rac` resets it"
        )
    return None


def _proc_name(pid: int) -> str | None:
    """The process's name where it is in this pid namespace (NVML lists the host's pids)."""
    try:
        return psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return None


def _busy(g: NvmlGpu, server_pids: set[int]) -> str | None:
    others = []
    for pid in g.compute_pids or []:
        if pid in server_pids:
            continue
        name = _proc_name(pid)
        if name is not None:  # a pid not visible here (another pid namespace) is not named
            others.append(f"{pid} ({name})")
    if not others:
        return None
    return (
        f"{GPU_BUSY} GPU {g.index} ({g.name}) is in use by {', '.join(others[:4])}"
        f"{' …' if len(others) > 4 else ''}: its work would share the GPU with every variant; stop it first"
    )


def _gpus(facts: BoxFacts, server_pids: set[int]) -> tuple[list[str], dict[str, str]]:
    if not facts.gpus:
        why = f"n/a: {facts.reasons.get('gpu', 'no GPU')}"
        return [], {"gpu_power_limit": why, "gpu_clocks": why, "gpu_processes": why}
    found: list[str] = []
    checks: dict[str, str] = {}
    for name, test, needs in (
        ("gpu_power_limit", _limit, lambda g: g.enforced_limit_w is not None and g.default_limit_w is not None),
        ("gpu_clocks", _clocks, lambda g: bool(g.reasons) or g.app_clock_mhz is not None),
        ("gpu_processes", lambda g: _busy(g, server_pids), lambda g: g.compute_pids is not None),
    ):
        lines = [line for g in facts.gpus if needs(g) and (line := test(g))]
        found += lines
        known = any(needs(g) for g in facts.gpus)
        checks[name] = lines[0].split(" ", 1)[0] if lines else (OK if known else "n/a: NVML does not say here")
    return found, checks


def _governor(facts: BoxFacts) -> tuple[list[str], dict[str, str]]:
    gov, driver = facts.governor, facts.scaling_driver
    if gov is None:
        return [], {"cpu_governor": f"n/a: {facts.reasons.get('governor', 'unreadable')}"}
    if gov != "powersave" or (driver or "") in DYNAMIC_POWERSAVE:
        return [], {"cpu_governor": OK}
    line = (
        f"{POWERSAVE} the CPU governor is powersave ({driver or 'driver unknown'}): the CPU sits at its lowest "
        "clock; `sudo cpupower frequency-set -g performance` (or schedutil) for the measurement"
    )
    return [line], {"cpu_governor": POWERSAVE}


def _memory(facts: BoxFacts) -> tuple[list[str], dict[str, str]]:
    mi = facts.meminfo
    if not mi:
        why = f"n/a: {facts.reasons.get('meminfo', 'unreadable')}"
        return [], {"swap": why, "hugepages": why}
    found, checks = [], {}
    if "SwapTotal" in mi and "SwapFree" in mi:
        used = mi["SwapTotal"] - mi["SwapFree"]
        if used >= SWAP_USED_MIN_BYTES:
            found.append(
                f"{SWAP_USED} {used / GIB:.1f} GiB of swap in use: memory ran short, and a server's pages may be "
                "paged out (slow, and slower by chance); free memory, then `sudo swapoff -a && sudo swapon -a`"
            )
        checks["swap"] = SWAP_USED if used >= SWAP_USED_MIN_BYTES else OK
    else:
        checks["swap"] = "n/a: meminfo has no SwapTotal"
    free = hugepages_free_bytes(mi)
    if free >= HUGEPAGES_FREE_MIN_BYTES:
        found.append(
            f"{HUGEPAGES} {free / GIB:.1f} GiB of HugePages are free but reserved: MemAvailable leaves them out, so "
            "free memory reads that much low (precmon's memory fit counts them); `sudo sysctl vm.nr_hugepages=0` "
            "returns them if nothing uses them"
        )
    checks["hugepages"] = HUGEPAGES if free >= HUGEPAGES_FREE_MIN_BYTES else OK
    return found, checks


def check(facts: BoxFacts, server_pids: Iterable[int] = ()) -> Preflight:
    """The findings of `facts`; `server_pids` are the servers about to be measured (theirs is no
    other job on the GPU)."""
    findings: list[str] = []
    checks: dict[str, Any] = {}
    for part in (_spbm(facts), _gpus(facts, set(server_pids)), _governor(facts), _memory(facts)):
        findings += part[0]
        checks |= part[1]
    return Preflight(findings=findings, checks=checks, facts=facts_record(facts))


def facts_record(facts: BoxFacts) -> dict[str, Any]:
    """The figures behind the checks, for `host.preflight.facts`."""
    mi = facts.meminfo
    keys = ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree", "HugePages_Total", "HugePages_Free", "Hugepagesize")
    return {
        "spbm_caps_w": {f"{x.device}:{x.controller}": {"cap": x.cap_w, "max": x.max_w} for x in facts.spbm},
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "power_limit_w": g.enforced_limit_w,
                "default_power_limit_w": g.default_limit_w,
                "clock_event_reasons": g.reasons,
                "compute_pids": g.compute_pids,
            }
            for g in facts.gpus
        ],
        "cpu_governor": facts.governor,
        "cpufreq_driver": facts.scaling_driver,
        "meminfo": {k: mi[k] for k in keys if k in mi},
    }


def server_pids(urls: Sequence[str]) -> set[int]:
    """The processes (and their children) listening on the ports of `urls` here: the servers."""
    pids: set[int] = set()
    for url in urls:
        port = cpu.url_port(url)
        if port:
            found, _ = cpu.server_pids(port)
            pids.update(found)
    return pids


def run_preflight(urls: Sequence[str] = (), nvml: Any = None) -> Preflight:
    """Read this box and check it (docs/design.md §4 "Preflight"); never raises for a missing fact."""
    return check(read_box(nvml), server_pids(urls))
