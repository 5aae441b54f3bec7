"""An exporter with every family filled: a fake GPU source, a fake vLLM, results with quality.

The label values are hostile on purpose (quotes, backslashes, newlines, a terminal escape):
prometheus_client must escape them and the text must still parse.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from precmon.exporter.catalog import SPECS
from precmon.exporter.serve import Exporter
from precmon.power.base import Channel, Sample
from precmon.power.sampler import PowerSampler
from tests.exporter.conftest import RESULTS

EVIL = 'q"uote\\back\nnew\x1b[31mred'
GPU = Channel("nvml:0", "nvml", "Fake H200", "gpu", has_energy_counter=True)
HOST = Channel("host", "host", "host", "system", has_watts=False)
EXTRAS = {"sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "gpu_util_pct": 87.0, "temp_c": 61.0}


class FakeGpu:
    """A PowerSource with watts, an energy counter and NVML's extras."""

    kind = "nvml"

    def channels(self) -> list[Channel]:
        return [GPU, HOST]

    def read(self, full: bool = True) -> list[Sample]:
        t = time.monotonic()
        extra = {**EXTRAS, "power_limit_w": 700.0} if full else {}
        return [Sample("nvml:0", t, 312.5, 1234.5, extra), Sample("host", t, None, None, {"cpu_util_pct": 12.5})]

    def close(self) -> None:
        pass


def results_folder(tmp: Path) -> Path:
    """cpu_tiny.json with quality figures and a hostile label, plus a newer copy of one variant."""
    doc = json.loads((RESULTS / "cpu_tiny.json").read_text())
    v = doc["variants"][1]
    v["label"], v["kv_cache_dtype"] = EVIL, "fp8"
    v["metrics"].update(quality_kld_mean=0.0123, quality_top1_agree=0.931, quality_kld_mean_err95=0.001)
    v["metrics"].update(quality_kld_p99=0.09, quality_kld_max=0.4, quality_top1_agree_err95=0.02)
    v["metrics"].update(quality_ppl_ratio=1.02, quality_rms_dp=0.031)
    v["power_by_node"] = [  # measured over two machines (--power-from): who drew what
        {"node": "spark-a", "power_idle_w": 30.5, "power_decode_w": 61.0, "energy_decode_j_per_token": 0.11},
        {"node": EVIL, "url": "http://10.0.0.2:9464", "power_decode_w": 58.25, "power_prefill_w": 70.0},
    ]
    v["metrics"].update(fit_users_at={"8192": 173, "32768": 43}, fit_context_for_users={"1": 1418363, "4": 354590})
    v["fit"] = {"usable_bytes": 23277580288, "basis": "/proc/meminfo: MemAvailable 21.7 GiB", "users_at": {}}
    folder = tmp / "results"
    (folder / "run1").mkdir(parents=True)
    (folder / "run1" / "results.json").write_text(json.dumps(doc))
    return folder


def full_exporter(tmp: Path, server_url: str) -> tuple[Exporter, PowerSampler]:
    sampler = PowerSampler(sources=[FakeGpu()], rate_hz=20, extras_hz=20).start()
    exp = Exporter(lambda: sampler, [(server_url, "vllm", None, None)], results_folder(tmp), interval_s=0.1)
    return exp.start(), sampler


def wait_complete(exp: Exporter, timeout_s: float = 15.0) -> str:
    """The exposition once every catalogued family has a sample (the server needs two polls)."""
    deadline, text = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        text = exp.exposition().decode()
        if all(f"\n{s.name}{{" in "\n" + text for s in SPECS):
            return text
        time.sleep(0.1)
    missing = [s.name for s in SPECS if f"\n{s.name}{{" not in "\n" + text]
    raise AssertionError(f"families never exported: {missing}")
