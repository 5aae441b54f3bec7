"""A results file measured over several machines: the report's power line names every node (an
unmeasured one as such), a line per variant says who drew what, and compare shows the same."""

from __future__ import annotations

import json

from precmon.core.schema import ResultsDoc, from_json
from precmon.report.render.markdown import render_markdown
from precmon.report.sections import build_compare, build_report
from tests.exporter.conftest import RESULTS


def _doc() -> ResultsDoc:
    d = json.loads((RESULTS / "cpu_tiny.json").read_text())
    d["host"]["hostname"], d["host"]["power_sources"] = "spark-a", [{"id": "hwmon3:sys_total", "scope": "system"}]
    d["host"]["nodes"] = [
        {"name": "spark-b", "url": "http://10.0.0.2:9464", "exporter": "precmon",
         "power_sources": [{"id": "spark-b/hwmon3:sys_total", "kind": "node", "scope": "system", "method": "counter"}]},
        {"name": "spark-c", "url": "http://10.0.0.3:9464", "exporter": "precmon",
         "unmeasured": "its exporter serves no power source"},
    ]  # fmt: skip
    d["variants"][0]["power_by_node"] = [
        {"node": "spark-a", "power_decode_w": 61.04, "power_idle_w": 30.5, "energy_decode_j_per_token": 0.11},
        {"node": "spark-b", "url": "http://10.0.0.2:9464", "power_decode_w": 58.2, "windows_missing": 2},
    ]
    return from_json(ResultsDoc, d)


def test_the_report_names_every_node() -> None:
    r = build_report(_doc())
    (power,) = [x for x in r.description if x.startswith("Power:")]
    assert power == (
        "Power: the sum of 3 nodes: spark-a hwmon3:sys_total (system); spark-b spark-b/hwmon3:sys_total (system) "
        "from its precmon exporter; spark-c unmeasured (its exporter serves no power source, not in the sum)."
    )
    (by_node,) = [x for x in r.description if x.startswith("Power by node")]
    assert by_node == (
        "Power by node, F16: spark-a: decode 61.0 W, idle 30.5 W, 0.11 J/token; "
        "spark-b: decode 58.2 W, no power in 2 windows."
    )
    assert by_node in render_markdown(r)


def test_compare_shows_the_nodes() -> None:
    r = build_compare([_doc(), _doc()], ["one.json", "two.json"])
    assert sum(x.startswith("Power by node") for x in r.description) == 2  # one per file's variant


def test_one_machine_reads_as_before() -> None:
    doc = from_json(ResultsDoc, json.loads((RESULTS / "cpu_tiny.json").read_text()))
    r = build_report(doc)
    assert not any(x.startswith("Power by node") for x in r.description)
    sources = ", ".join(f"{p.id} ({p.scope})" for p in doc.host.power_sources)
    assert f"Power: {sources or 'no power source'}." in r.description  # the line one machine always had
