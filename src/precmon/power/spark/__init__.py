"""The DGX Spark (GB10): the `spbm` driver's power, energy accumulators, limits and PROCHOT.

`layout.py` holds what the driver exposes (read from its source), `source.py` the power source,
`counters.py` the wrap- and reset-aware energy total, `report.py` the doctor's entry.
`power/hwmon.py` hands it the hwmon directory named `spbm`; `measure/trust/spark.py` turns the
status channel into warnings.
"""

from .source import KIND, STATUS_LABEL, SpbmSource, find_spbm, is_status, open_spbm

__all__ = ["KIND", "STATUS_LABEL", "SpbmSource", "find_spbm", "is_status", "open_spbm"]
