"""The collectors read what is there, never poll on their own, and say nothing stale or made up."""

from __future__ import annotations

import json
import os
import time

from prometheus_client.parser import text_string_to_metric_families

from precmon.exporter.power import PowerCollector
from precmon.exporter.results import ResultsCollector
from precmon.exporter.serve import Exporter
from precmon.exporter.servers import HEALTH_EVERY, ServerWatcher
from precmon.power.base import Channel, Sample
from precmon.power.sampler import PowerSampler
from tests.exporter.conftest import RESULTS, free_port
from tests.fakes.wire_servers import Scripted, ScriptedServer

CH = Channel("nvml:0", "nvml", "GPU", "gpu", has_energy_counter=True)


class CountingSource:
    """Counts reads; the energy counter on the first read only (NVML's gated counter, slowed down)."""

    kind = "nvml"

    def __init__(self) -> None:
        self.reads = 0

    def channels(self) -> list[Channel]:
        return [CH]

    def read(self, full: bool = True) -> list[Sample]:
        self.reads += 1
        energy = 100.0 if self.reads == 1 else None
        return [Sample("nvml:0", time.monotonic(), 250.0, energy)]

    def close(self) -> None:
        pass


def _values(collector) -> dict[str, list]:
    out: dict[str, list] = {}
    for fam in collector.collect():
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def test_scrapes_read_the_sampler_not_the_sources() -> None:
    src = CountingSource()
    sampler = PowerSampler(sources=[src], rate_hz=1.0, extras_hz=1.0).start()
    try:
        exp = Exporter(lambda: sampler)
        deadline = time.monotonic() + 5
        while not sampler.latest() and time.monotonic() < deadline:
            time.sleep(0.01)
        before = src.reads
        for _ in range(50):
            text = exp.exposition().decode()
        assert src.reads - before <= 1  # at most the sampler's own 1 Hz tick, not 50 reads
        assert 'precmon_power_watts{host="' in text
    finally:
        sampler.stop()


def test_a_gated_counter_exports_its_newest_value_and_a_stale_sample_nothing() -> None:
    src = CountingSource()
    sampler = PowerSampler(sources=[src], rate_hz=50.0, extras_hz=50.0).start()
    try:
        deadline = time.monotonic() + 5
        while src.reads < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        got = _values(PowerCollector(lambda: sampler, host="h"))
        (energy,) = got["precmon_energy_joules_total"]
        assert energy.value == 100.0  # from the last read that carried the counter, not dropped
        assert energy.labels == {"source": "nvml:0", "scope": "gpu", "host": "h", "method": "counter"}
    finally:
        sampler.stop()
    time.sleep(0.1)
    # the node's identity alone: nothing stale, nothing before the TUI has opened its sampler
    assert set(_values(PowerCollector(lambda: sampler, host="h", stale_after_s=0.05))) == {"precmon_node_info"}
    assert set(_values(PowerCollector(lambda: None))) == {"precmon_node_info"}


LLAMA = {
    "/health": Scripted(body={"status": "ok"}),
    "/v1/models": Scripted(body={"object": "list", "data": [{"id": "tiny-q4", "object": "model"}]}),
    "/props": Scripted(body={"model_path": "/m/tiny-q4.gguf", "default_generation_settings": {"n_ctx": 2048}}),
    "/slots": Scripted(body=[{"id": 0, "id_task": 7, "is_processing": True, "next_token": [{"n_decoded": 12}]}]),
    "/metrics": Scripted(
        body=b"llamacpp:tokens_predicted_total 100\nllamacpp:requests_processing 1\n", content_type="text/plain"
    ),
}


def test_llamacpp_server_up_live_rate_and_running_and_a_down_server() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    with ScriptedServer(LLAMA) as srv:
        w = ServerWatcher([(srv.url, "llamacpp", None, None), (down, "auto", None, None)], 0.05, host="h").start()
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and w.states()[0].tok_s is None:
                time.sleep(0.05)
            got = _values(w)
        finally:
            w.stop()
    up = {s.labels["url"]: s for s in got["precmon_server_up"]}
    assert up[srv.url].value == 1.0
    assert (up[srv.url].labels["kind"], up[srv.url].labels["model"]) == ("llamacpp", "tiny-q4")
    assert up[down].value == 0.0
    (rate,) = got["precmon_server_generation_tokens_per_second"]
    assert rate.value == 0.0 and rate.labels["url"] == srv.url  # the same slot, the same count: 0 tok/s
    (running,) = got["precmon_server_requests_running"]
    assert running.value == 1.0


def test_server_url_credentials_never_reach_a_label() -> None:
    w = ServerWatcher([("http://user:hunter2@127.0.0.1:1", "vllm", None, None)], 1.0)
    (up,) = _values(w)["precmon_server_up"]
    assert "hunter2" not in up.labels["url"]


def test_newest_file_wins_for_the_same_variant(tmp_path) -> None:
    doc = json.loads((RESULTS / "cpu_tiny.json").read_text())
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps(doc))
    doc["variants"][0]["metrics"]["decode_tok_s"] = 999.0
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(doc))
    old_t = time.time() - 3600
    os.utime(tmp_path / "a" / "results.json", (old_t, old_t))
    got = _values(ResultsCollector(tmp_path))
    tok = {s.labels["label"]: s.value for s in got["precmon_result_decode_tokens_per_second"]}
    assert tok == {"F16": 999.0, "Q8_0": 553.4, "Q4_K_M": 756.2}
    text = Exporter(lambda: None, results=tmp_path).exposition().decode()
    names = {f.name for f in text_string_to_metric_families(text)}
    assert names == {  # no quality or node figures in this file: no empty families for them either
        "precmon_node_info",  # the node's identity, always
        "precmon_result_decode_tokens_per_second",
        "precmon_result_energy_per_token_joules",
        "precmon_result_ttft_seconds",
        "precmon_result_power_watts",
    }


def test_a_server_without_metrics_is_asked_for_it_only_now_and_then() -> None:
    routes = {k: v for k, v in LLAMA.items() if k != "/metrics"}  # llama-server without --metrics
    with ScriptedServer(routes) as srv:
        w = ServerWatcher([(srv.url, "llamacpp", None, None)], 0.02, host="h").start()
        try:
            time.sleep(1.0)
        finally:
            w.stop()
        state = w.states()[0]
        paths = [r[1] for r in srv.requests]
    polls = w.watched[0].tick
    assert polls >= 10
    assert paths.count("/metrics") <= polls // HEALTH_EVERY + 2  # not once per poll
    assert paths.count("/slots") >= polls - 2  # the live rate still comes from /slots
    assert state.up and state.tok_s == 0.0
