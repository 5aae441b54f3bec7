"""A DGX Spark sysfs tree as the `spbm` driver writes it, and GB10 as NVML answers.

Transcribed from antheas/spark_hwmon `spbm.c` at 352c76e (driver 0.3.0), not from precmon's code:
- hwmon numbers a channel by its place in the driver's table (`pwr_chans`, `nrg_chans`,
  `temp_chans`), 1-based; a channel the firmware's `_DSM` does not resolve is hidden (no files)
  and leaves a gap in the numbering;
- `powerN_input`/`_cap`/`_max`/`_min` = firmware mW × 1000 (µW); `energyN_input` = u32 mJ × 1000
  (µJ); `tempN_input` = centidegrees × 10 (m°C); `prochot`, `pl_level`, `tj_max_c` are `%u`;
- only pl1, pl2, syspl1, syspl2 have `_cap` (the effective limit), `_max` and `_min`.
Idle values are the driver README's table; the limits its earlier README (dc7a559): EC defaults
PL1 140 W, PL2 142 W, SysPL1 231 W, SysPL2 244 W; ceilings 250/250/300/300 W.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# spbm.c pwr_chans, in order, with the README's idle watts
POWER = [
    ("sys_total", 25.0),
    ("soc_pkg", 17.0),
    ("cpu_gpu", 6.0),
    ("cpu_p", 0.5),
    ("cpu_e", 0.01),
    ("vcore", 4.0),
    ("dc_input", 26.0),
    ("gpu", 5.0),
    ("prereg", 8.0),
    ("dla", 0.1),
    ("pl1", 18.0),
    ("pl2", 18.0),
    ("syspl1", 26.0),
    ("syspl2", 27.0),
]
# before e3357bb the table went on with the firmware's budgets (README: 105, 170, 19, 97 W)
BUDGETS = [("budget_cpu", 105.0), ("budget_gpu", 170.0), ("budget_cpu_e", 19.0), ("budget_cpu_p", 97.0)]
ENERGY = ["pkg", "cpu_e", "cpu_p", "gpu"]  # nrg_chans
TEMPS = ["tj_max", "cpu_e_clu0", "cpu_p_clu0", "cpu_e_clu1", "cpu_p_clu1", "gpu", "soc", "dla"]
LIMITS_W = {"pl1": (140.0, 250.0), "pl2": (142.0, 250.0), "syspl1": (231.0, 300.0), "syspl2": (244.0, 300.0)}
FLOOR_W = 5.0  # LIMIT_LOW: the README gives no figure; any floor below the caps serves


def mw_to_uw(watts: float) -> int:
    """The driver's scaling of a firmware milliwatt register: whole mW × 1000."""
    return round(watts * 1000) * 1000


def write_spbm(
    root: Path,
    hwmon: str = "hwmon3",
    watts: dict[str, float] | None = None,
    energy_mj: dict[str, int] | None = None,
    caps_w: dict[str, float] | None = None,
    hidden: tuple[str, ...] = (),
    prochot: int | None = 0,
    pl_level: int | None = 1,
    budgets: bool = False,
    temp_c: float = 31.0,
) -> Path:
    """Write `/sys/class/hwmon/<hwmon>` under `root` as spbm 0.3.0 would; return that directory.

    `hidden` names labels the firmware did not resolve (`gpu`: every kind; `power:gpu` one kind;
    `prochot`, `pl_level`): their files are absent and the numbering keeps the gap.
    """

    def gone(kind: str, label: str) -> bool:
        return label in hidden or f"{kind}:{label}" in hidden

    d = root / "sys" / "class" / "hwmon" / hwmon
    d.mkdir(parents=True, exist_ok=True)
    files: dict[str, Any] = {"name": "spbm"}
    w = dict(POWER + (BUDGETS if budgets else [])) | (watts or {})
    table = [label for label, _ in POWER] + ([label for label, _ in BUDGETS] if budgets else [])
    for i, label in enumerate(table, 1):
        if gone("power", label):
            continue
        files[f"power{i}_label"] = label
        files[f"power{i}_input"] = mw_to_uw(w[label])
        if label in LIMITS_W:
            cap, ceiling = LIMITS_W[label]
            files[f"power{i}_cap"] = mw_to_uw((caps_w or {}).get(label, cap))
            files[f"power{i}_max"] = mw_to_uw(ceiling)
            files[f"power{i}_min"] = mw_to_uw(FLOOR_W)
    for i, label in enumerate(ENERGY, 1):
        if not gone("energy", label):
            files[f"energy{i}_label"] = label
            files[f"energy{i}_input"] = (energy_mj or {}).get(label, 1_000_000) * 1000
    for i, label in enumerate(TEMPS, 1):
        if not gone("temp", label):
            files[f"temp{i}_label"] = label
            files[f"temp{i}_input"] = round(temp_c * 100) * 10
    if prochot is not None and "prochot" not in hidden:
        files["prochot"] = prochot
    if pl_level is not None and "pl_level" not in hidden:
        files["pl_level"] = pl_level
    files["tj_max_c"] = 400  # README: ~40 idle (decidegrees above ambient)
    for name, value in files.items():
        (d / name).write_text(f"{value}\n")
    return d


def energy_path(d: Path, label: str) -> Path:
    return d / f"energy{ENERGY.index(label) + 1}_input"


def power_path(d: Path, label: str, attr: str = "input") -> Path:
    return d / f"power{[x for x, _ in POWER].index(label) + 1}_{attr}"


def gb10_nvml(power_mw: int = 11_200, sm_mhz: int = 2400) -> Any:
    """NVML as it answers on a DGX Spark: name "NVIDIA GB10", power.draw works (the 1 s average;
    the instant field answers NOT_SUPPORTED), memory info and the power limit are NotSupported
    (nvidia-smi prints N/A for both). The fake is tests/power/test_gpu_validity.py's."""
    from tests.power.test_gpu_validity import GpuFake

    return GpuFake(
        name="NVIDIA GB10",
        instant_return=3,
        unsupported={"memory", "limit"},
        power_mw=power_mw,
        sm_mhz=sm_mhz,
        max_sm_mhz=2418,
    )
