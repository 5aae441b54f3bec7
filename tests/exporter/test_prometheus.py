"""The exporter under a real Prometheus: what an instant query returns is what the node measured.

A fixture sysfs (PRECMON_SYSFS_ROOT) gives DGX Spark's spbm driver reading 38.2 W system power;
a results folder holds a real results file. Prometheus scrapes the exporter process every second
and `/api/v1/query` must return both, with their labels.
"""

from __future__ import annotations

import shutil

from tests.exporter.conftest import RESULTS, SPBM, free_port, wait_for, write_sysfs
from tests.exporter.test_grafana import dashboard_exprs


def test_prometheus_scrapes_power_and_results(tmp_path, exporter_proc, prometheus) -> None:
    sysfs = write_sysfs(tmp_path / "root", {"hwmon3": SPBM})
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(RESULTS / "cpu_tiny.json", results / "results.json")
    port = free_port()
    exp = exporter_proc(["--listen", f"127.0.0.1:{port}", "--results", str(results), "--interval-s", "0.5"], sysfs)
    wait_for(f"http://127.0.0.1:{port}/metrics", "the exporter")
    prom = prometheus([f"127.0.0.1:{port}"])

    (series,) = prom.query_until('precmon_power_watts{source="hwmon3:sys_total"}')
    assert series["metric"]["scope"] == "system"
    assert series["metric"]["job"] == "precmon"
    assert float(series["value"][1]) == 38.2
    (gpu,) = prom.query('precmon_power_watts{scope="gpu"}')
    assert float(gpu["value"][1]) == 9.25
    (energy,) = prom.query('precmon_energy_joules_total{method="counter"}')  # the driver's own counter
    assert energy["metric"]["source"] == "hwmon3:sys_total"
    assert float(energy["value"][1]) == 5000.0
    # the gpu rail keeps no counter: the exporter integrates its samples (9.25 W since it started)
    (integrated,) = prom.query('precmon_energy_joules_total{method="integrated"}')
    assert integrated["metric"]["source"] == "hwmon3:gpu" and integrated["metric"]["scope"] == "gpu"
    assert float(integrated["value"][1]) > 0
    (node,) = prom.query("precmon_node_info")
    assert node["metric"]["host"] == series["metric"]["host"]

    (tok,) = prom.query_until('precmon_result_decode_tokens_per_second{label="Q4_K_M"}')
    assert tok["metric"]["precision"] == "int4"
    assert tok["metric"]["model"] == "tiny-Q4_K_M"
    assert tok["metric"]["host"] == "ci-runner"
    assert float(tok["value"][1]) == 756.2
    (jpt,) = prom.query('precmon_result_energy_per_token_joules{label="F16"}')
    assert float(jpt["value"][1]) == 0.1025

    for expr in dashboard_exprs():  # the dashboard's PromQL is valid for a real Prometheus
        if not expr.startswith("label_values("):  # a Grafana function, not PromQL
            prom.query(expr)

    code, err = exp.stop()
    assert code == 130, err
    assert "Traceback" not in err
