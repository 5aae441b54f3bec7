"""The exposition parses with prometheus_client's own parser, and every name follows the conventions."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from precmon.exporter.catalog import SPECS
from precmon.untrusted import visible
from tests.exporter.full import EVIL, full_exporter, wait_complete
from tests.fakes.wire_servers import WireBehaviour, WireServer

UNIT_SUFFIXES = (
    "_watts",
    "_joules",
    "_joules_total",
    "_seconds",
    "_hertz",
    "_celsius",
    "_ratio",
    "_tokens_per_second",
    "_nats",
    "_bytes",
    "_tokens",
)
UNITLESS = {
    "precmon_server_up",
    "precmon_server_requests_running",
    "precmon_node_info",
    "precmon_result_fit_users",
}  # a state, counts, an identity


@pytest.fixture
def exposition(tmp_path):
    with WireServer(WireBehaviour(kind="vllm", model="tiny-vllm")) as srv:
        exp, sampler = full_exporter(tmp_path, srv.url)
        try:
            yield wait_complete(exp)
        finally:
            exp.stop()
            sampler.stop()


def _samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def test_every_exported_name_is_catalogued_and_follows_the_conventions(exposition) -> None:
    samples = _samples(exposition)
    assert set(samples) == {s.name for s in SPECS}  # the catalog is exactly what is exported
    for spec in SPECS:
        assert re.fullmatch(r"precmon_[a-z0-9_]+", spec.name), spec.name
        assert spec.name in UNITLESS or spec.name.endswith(UNIT_SUFFIXES), f"{spec.name}: no base-unit suffix"
        assert spec.name.endswith("_total") == (spec.kind == "counter"), spec.name
        for s in samples[spec.name]:
            assert set(s.labels) == set(spec.labels), (spec.name, s.labels)
    types = {f.name: f.type for f in text_string_to_metric_families(exposition)}
    assert types["precmon_energy_joules"] == "counter"
    assert types["precmon_power_watts"] == "gauge"


def test_values_are_in_base_units(exposition) -> None:
    s = {name: {tuple(sorted(x.labels.items())): x.value for x in xs} for name, xs in _samples(exposition).items()}

    def one(name: str, **labels: str) -> float:
        (v,) = [v for k, v in s[name].items() if all(dict(k).get(a) == b for a, b in labels.items())]
        return v

    assert one("precmon_power_watts", source="nvml:0", scope="gpu") == 312.5
    assert one("precmon_energy_joules_total", source="nvml:0") == 1234.5
    assert one("precmon_gpu_clock_hertz", clock="sm") == 1.98e9
    assert one("precmon_gpu_clock_hertz", clock="memory") == 3.201e9
    assert one("precmon_gpu_utilization_ratio") == 0.87
    assert one("precmon_gpu_temperature_celsius") == 61.0
    assert one("precmon_cpu_utilization_ratio", source="host") == 0.125
    assert one("precmon_server_up", kind="vllm", model="tiny-vllm") == 1.0
    assert one("precmon_server_generation_tokens_per_second", kind="vllm") == 0.0
    assert one("precmon_result_ttft_seconds", label="F16", prompt_tokens="1024") == 0.563
    assert one("precmon_result_power_watts", label="F16", phase="decode") == 41.2
    assert one("precmon_result_node_power_watts", node="spark-a", phase="idle") == 30.5
    assert one("precmon_result_node_power_watts", node=visible(EVIL), phase="prefill") == 70.0
    assert one("precmon_result_node_energy_per_token_joules", node="spark-a") == 0.11


def test_hostile_label_values_are_escaped_not_dropped(exposition) -> None:
    assert "\x1b" not in exposition  # `curl /metrics` on a terminal runs no escape sequence
    (kld,) = _samples(exposition)["precmon_result_quality_kld_nats"]
    assert kld.labels["label"] == visible(EVIL)  # quote, backslash and all: escaped on the wire
    assert '"' in kld.labels["label"] and "\\" in kld.labels["label"]
    assert kld.labels["kv_cache_dtype"] == "fp8"
    assert kld.value == 0.0123
    (agree,) = _samples(exposition)["precmon_result_quality_top1_agreement_ratio"]
    assert agree.value == 0.931
    for line in exposition.splitlines():
        assert line.startswith(("#", "precmon_")), repr(line)  # a newline in a value never splits a line
