"""docs/grafana/precmon-dashboard.json names only metrics the exporter exports.

A dashboard that queries a misspelt or renamed metric shows "No data" forever, silently; so
every PromQL expression (panel targets and the templating queries) is parsed for `precmon_`
identifiers, each must be in the exporter's catalog, and an expression without one fails too.
The Prometheus test runs the same expressions against a real server (their syntax).
"""

from __future__ import annotations

import json
import re

from precmon.exporter.catalog import BY_NAME
from tests.exporter.conftest import REPO

DASHBOARD = REPO / "docs" / "grafana" / "precmon-dashboard.json"
METRIC_RE = re.compile(r"\bprecmon_[A-Za-z0-9_:]*")


def dashboard_exprs() -> list[str]:
    """Every PromQL expression in the dashboard, `$host` made a match-all (as Grafana's All)."""
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    for var in doc["templating"]["list"]:
        if var["type"] == "query":
            q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            exprs.append(q)
    return [e.replace("$host", ".*") for e in exprs]


def metric_names(expr: str) -> set[str]:
    return set(METRIC_RE.findall(expr))


def test_every_expression_names_only_exported_metrics() -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    for expr in exprs:
        names = metric_names(expr)
        assert names, f"no precmon_ metric in {expr!r}"
        unknown = names - set(BY_NAME)
        assert not unknown, f"{expr!r} names {sorted(unknown)}, which the exporter does not export"


def test_the_check_catches_a_wrong_name() -> None:
    assert metric_names('sum(precmon_power_watt{host=~".*"})') - set(BY_NAME) == {"precmon_power_watt"}
    assert metric_names("up") == set()


def test_dashboard_shows_power_by_scope_tok_s_and_j_per_token_per_host() -> None:
    doc = json.loads(DASHBOARD.read_text())
    (host,) = [v for v in doc["templating"]["list"] if v["name"] == "host"]
    assert "label_values(precmon_power_watts, host)" in json.dumps(host["query"])
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    for name in (
        "precmon_power_watts",
        "precmon_server_generation_tokens_per_second",
        "precmon_result_decode_tokens_per_second",
        "precmon_result_energy_per_token_joules",
    ):
        assert name in used
    for p in doc["panels"]:
        for t in p["targets"]:
            assert 'host=~"$host"' in t["expr"], (p["title"], t["expr"])  # every panel follows the host picker
