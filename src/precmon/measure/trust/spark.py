"""Was a DGX Spark held back while it was measured? The spbm driver's answer, not a guess.

The status channel of `power/spark` carries, per sample: `prochot` (0 = normal), `pl_level` (the
active power-limit level) and each PL controller's EWMA power and effective cap
(`pl1_ewma_w`, `pl1_cap_w`, ... with ceilings `_max_w`). From the samples taken during the runs:

- `prochot:` when PROCHOT was asserted in any of them: the SoC's throttle line is never up on a
  healthy run, so there is no share below which it is noise; the share says how much of the run.
- `power-limited:` when a controller's EWMA power was within `AT_CAP_RATIO` of its cap in at
  least `LIMIT_SHARE_MIN` of them (the firmware was holding the power down), or when `pl_level`
  moved during the runs (the runs mixed power states). The driver does not say what each level
  means, so a level is never read as good or bad, only as changed.

Where the driver is present these replace the `low-power:` guess (`validity._low_power`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from precmon.core.stats import median

PROCHOT_CODE = "prochot:"
LIMITED_CODE = "power-limited:"
CODES = (LIMITED_CODE, PROCHOT_CODE)
CONTROLLERS = ("pl1", "pl2", "syspl1", "syspl2")
# A PID loop holding its EWMA at the limit sits just under it; 95% leaves room for the EWMA's
# lag and the cap's mW rounding without counting a run that merely came near.
AT_CAP_RATIO = 0.95
# The same share as gpu-throttle (validity.THROTTLE_SHARE_MIN): one sample at the cap is a touch,
# a tenth of the run is a limit the numbers carry.
LIMIT_SHARE_MIN = 0.10

#: (phase, extras) of the status channel's samples taken during runs
StatusSamples = Sequence[tuple[str, dict[str, float]]]


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def spark_checks(samples: StatusSamples, channel_id: str = "spbm") -> tuple[dict[str, Any], list[str]]:
    """Figures and warnings from the spbm status samples of the runs (`channel_id`: "hwmon3:status")."""
    channel = f"spbm {channel_id.split(':')[0]}" if ":" in channel_id else channel_id
    extras = [x for _, x in samples]
    if not extras:
        return {"reason": "n/a: no spbm status sample was taken during the runs"}, []
    fig: dict[str, Any] = {"samples": len(extras)}
    warnings: list[str] = []
    hot = [x["prochot"] for x in extras if "prochot" in x]
    if hot:
        share = sum(v != 0 for v in hot) / len(hot)
        fig["prochot_share"] = _r(share)
        if share > 0:
            warnings.append(
                f"{PROCHOT_CODE} {channel} prochot asserted in {share:.0%} of {len(hot)} samples during the runs: "
                "the SoC throttled (PROCHOT), the numbers are the throttled machine's; check cooling and power"
            )
    else:
        fig["prochot_share"] = "n/a: the driver exposes no prochot"
    fig["controllers"] = {c: f for c in CONTROLLERS if (f := _controller(c, extras, channel, warnings))}
    levels = [x["pl_level"] for x in extras if "pl_level" in x]
    if levels:
        counts = {int(v): levels.count(v) for v in dict.fromkeys(levels)}
        fig["pl_level_share"] = {str(k): _r(n / len(levels)) for k, n in counts.items()}
        if len(counts) > 1:
            text = ", ".join(f"{k} in {n / len(levels):.0%}" for k, n in counts.items())
            warnings.append(
                f"{LIMITED_CODE} {channel} pl_level changed during the runs (level {text} of {len(levels)} samples): "
                "the firmware moved between power-limit levels, the runs mix power states"
            )
    else:
        fig["pl_level_share"] = "n/a: the driver exposes no pl_level"
    return fig, warnings


def _controller(name: str, extras: list[dict[str, float]], channel: str, warnings: list[str]) -> dict[str, Any]:
    pairs = [
        (x[f"{name}_ewma_w"], x[f"{name}_cap_w"])
        for x in extras
        if f"{name}_ewma_w" in x and x.get(f"{name}_cap_w", 0) > 0
    ]
    if not pairs:
        return {}
    caps = [c for _, c in pairs]
    ceiling = next((x[f"{name}_max_w"] for x in extras if f"{name}_max_w" in x), None)
    at_cap = sum(e >= AT_CAP_RATIO * c for e, c in pairs) / len(pairs)
    fig = {
        "ewma_w_median": _r(median([e for e, _ in pairs]), 2),
        "cap_w_min": min(caps),
        "cap_w_max": max(caps),
        "ceiling_w": ceiling,
        "at_cap_share": _r(at_cap),
    }
    if at_cap >= LIMIT_SHARE_MIN:
        of = f" of a {ceiling:.0f} W ceiling" if ceiling else ""
        cap = f"{min(caps):.0f} W" if min(caps) == max(caps) else f"{min(caps):.0f}-{max(caps):.0f} W"
        warnings.append(
            f"{LIMITED_CODE} {channel} {name} at ≥{AT_CAP_RATIO:.0%} of its {cap} cap{of} in {at_cap:.0%} of "
            f"{len(pairs)} samples during the runs (EWMA median {fig['ewma_w_median']:.0f} W): the firmware held "
            "the power down, the numbers are this power state's"
        )
    return fig
