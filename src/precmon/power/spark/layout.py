"""What the DGX Spark's `spbm` hwmon driver exposes, read from its source (not guessed).

Source read: github.com/antheas/spark_hwmon `spbm.c` and `README.md` at 352c76e (2026-03-02, driver
0.3.0; the fork jaim12005/spark_hwmon is the same commit), with its history back to 94b5972.

- The hwmon device is named `spbm` (`/sys/class/hwmon/hwmonN/name`). Its power channels are
  `power<i>_input` with `power<i>_label`, numbered 1.. in the driver's table order; the firmware
  gives milliwatts, the driver multiplies by 1000 (µW, a multiple of 1000).
- Channels whose register the firmware's `_DSM` table does not name are *hidden*: their files are
  absent (`is_visible` returns 0) but the numbering keeps its gaps, so labels, never indices, say
  what a file is.
- The four PL controllers' `power<i>_input` is the EWMA-smoothed power that controller sees;
  `power<i>_cap` is the effective limit (rw), `power<i>_max` / `_min` the firmware's ceiling and
  floor (ro), all µW. They are not a draw of their own (they repeat soc_pkg and sys_total, smoothed).
- 0.3.0 before e3357bb (18 channels) also had `budget_cpu`, `budget_gpu`,
  `budget_cpu_e`, `budget_cpu_p`: the firmware's power *allocation* (170 W for the GPU at idle),
  never a draw.
- Energy: `energy<i>_input` / `energy<i>_label`, labels `pkg`, `cpu_e`, `cpu_p`, `gpu`: u32
  millijoule accumulators × 1000 (µJ), so they wrap at 2**32 mJ (4.29 MJ: ~12 h at 100 W). The
  README: prefer them to instant watts (the firmware's 100 ms PID loop makes watts oscillate).
- Temperatures: `temp<i>_input` (centidegrees × 10 = m°C), labels below.
- Status: plain attributes in the hwmon directory, decimal (`%u`): `prochot` (0 = normal; PROCHOT
  throttle), `pl_level` (the active power-limit level; the driver says no more about its values),
  `tj_max_c` (README: "thermal rise above ambient, decidegrees", moved out of temp for odd values).
"""

from __future__ import annotations

from dataclasses import dataclass

DRIVER_NAME = "spbm"
UW_PER_W = 1_000_000
UJ_PER_J = 1_000_000
MC_PER_C = 1000
# The energy registers are 32-bit millijoules; the driver scales them to µJ without widening.
ENERGY_WRAP_UJ = 2**32 * 1000


@dataclass(frozen=True)
class DrawChannel:
    """One power channel that is a draw: its scope (power.base.SCOPES) and the driver's words."""

    label: str
    scope: str
    what: str


# sys_total is the firmware's total system power: the widest, so the headline. dc_input is the
# charger rail (the driver: "DC input / charger rail"); with no statement of what it includes it
# ranks as a rail, leaving the headline to sys_total as before.
DRAW_CHANNELS = (
    DrawChannel("sys_total", "system", "total system power"),
    DrawChannel("soc_pkg", "soc", "SoC package"),
    DrawChannel("cpu_gpu", "module", "CPU + GPU combined"),
    DrawChannel("cpu_p", "cpu", "P-core cluster (10x Cortex-X925)"),
    DrawChannel("cpu_e", "cpu", "E-core cluster (10x Cortex-A725)"),
    DrawChannel("vcore", "rail", "core voltage domain"),
    DrawChannel("dc_input", "rail", "DC input / charger rail"),
    DrawChannel("gpu", "gpu", "GPU (matches nvidia-smi)"),
    DrawChannel("prereg", "rail", "pre-regulator input"),
    DrawChannel("dla", "rail", "Deep Learning Accelerator"),
)
DRAW_BY_LABEL = {c.label: c for c in DRAW_CHANNELS}

# Power channels that are the limit controllers (input = EWMA power, cap/max/min = limits).
CONTROLLERS = ("pl1", "pl2", "syspl1", "syspl2")
# The EC's own limits, which `power<i>_cap` reads when no OS limit is set: the driver's README at
# dc7a559 (its `power_max` read them then; since 363a5ce it reads the firmware's ceiling instead,
# 250/250/300/300 W). A cap below them is a limit someone or something set (docs/design.md §4
# "Preflight").
EC_DEFAULT_W = {"pl1": 140.0, "pl2": 142.0, "syspl1": 231.0, "syspl2": 244.0}
# Driver versions before dc7a559 named the EWMA channels so (and pl1.. read the limit itself).
OLD_CONTROLLER_PREFIX = "ewma_"
BUDGET_PREFIX = "budget_"

# An energy accumulator pairs with the power channel of the same label (the driver's own naming:
# one word for the power and the energy of one domain: cpu_e, cpu_p, gpu). `pkg` has no power
# twin of that name, so it is a channel of its own, its watts from the counter's rate.
ENERGY_OWN = {"pkg": ("soc", "package energy accumulator (no power file of that name)")}

TEMPS = ("tj_max", "cpu_e_clu0", "cpu_p_clu0", "cpu_e_clu1", "cpu_p_clu1", "gpu", "soc", "dla")
HOTTEST = "tj_max"  # "package Tj max": the hottest junction, the one temperature a row shows

PROCHOT = "prochot"
PL_LEVEL = "pl_level"
STATUS_FILES = (PROCHOT, PL_LEVEL)
