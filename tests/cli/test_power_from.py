"""`--power-from URL` (bench, sweep, the TUI, watch) and the sweep key `power_from`: another
node's power in every window, or a one-line refusal before anything is measured."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import pytest

from precmon.cli.commands.tui_cmd import tui_config
from precmon.cli.parser import build_parser
from precmon.exporter.serve import Exporter
from precmon.power.base import Channel, Sample
from precmon.power.sampler import PowerSampler
from precmon.sweep.spec import SpecError, parse_spec
from tests.exporter.conftest import free_port
from tests.fakes.timed_server import Behaviour, TimedServer

SPEC = """\
[defaults]
url = "http://127.0.0.1:8080"
power_from = ["http://spark-b:9464", "http://dgx-07:9400/metrics"]

[[variant]]
label = "F16"
precision = "fp16"
model = "tiny-F16"
"""


def test_the_sweep_key_is_a_list_of_urls_in_defaults_only() -> None:
    assert parse_spec(SPEC).power_from == ["http://spark-b:9464", "http://dgx-07:9400/metrics"]
    assert parse_spec(SPEC.replace("power_from = [", "# power_from = [")).power_from == []
    with pytest.raises(SpecError, match=r"<sweep>:3: \[defaults\] key 'power_from': expected a list of http"):
        parse_spec(SPEC.replace('"http://spark-b:9464"', '"spark-b:9464"'))
    with pytest.raises(SpecError, match="power_from"):
        parse_spec(SPEC.replace('model = "tiny-F16"', 'model = "tiny-F16"\npower_from = ["http://x:1"]'))


def test_the_flag_is_repeatable_everywhere_and_the_tui_adds_the_sweep_files() -> None:
    p = build_parser()
    urls = ["--power-from", "http://a:9464", "--power-from", "http://b:9464"]
    assert p.parse_args(["bench", "--url", "http://x:1", *urls]).power_from == ["http://a:9464", "http://b:9464"]
    assert p.parse_args(["sweep", "f.toml", *urls]).power_from == ["http://a:9464", "http://b:9464"]
    assert p.parse_args([*urls, "watch"]).power_from == ["http://a:9464", "http://b:9464"]  # the top level's
    assert p.parse_args(["watch", *urls[:2]]).power_from == ["http://a:9464"]
    args = p.parse_args(urls[:2])
    config = tui_config(args, None, sweep_spec=parse_spec(SPEC))
    assert config.power_from == ("http://a:9464", "http://spark-b:9464", "http://dgx-07:9400/metrics")
    assert tui_config(argparse.Namespace(url=None, model=None, refresh_s=1.0), None).power_from == ()


def _bench(*extra: str, url: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "precmon.cli", "bench", "--url", url, "--quick", "--idle-s", "0.5", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_node_that_does_not_answer_is_refused_before_anything_is_measured(tmp_path) -> None:
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        proc = _bench("--power-from", f"http://127.0.0.1:{free_port()}", "--out", str(tmp_path / "o"), url=srv.url)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("precmon: --power-from: no answer from http://127.0.0.1:")
        assert not [r for r in srv.behaviour.requests if "prompt" in r]  # nothing was measured
    assert not (tmp_path / "o" / "results.json").exists()


class Node:
    """A node's power source: 55 W, an exact energy counter."""

    kind = "fake"
    ch = Channel("fake:sys", "fake", "sys", "system", has_energy_counter=True)

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def channels(self) -> list[Channel]:
        return [self.ch]

    def read(self, full: bool = True) -> list[Sample]:
        t = time.monotonic()
        return [Sample(self.ch.id, t, 55.0, 55.0 * (t - self.t0))]

    def close(self) -> None:
        pass


def test_bench_with_only_another_nodes_power(tmp_path) -> None:
    sampler = PowerSampler(sources=[Node()], rate_hz=2).start()
    exp = Exporter(lambda: sampler, host="spark-b")
    port = exp.serve("127.0.0.1", 0)
    out = tmp_path / "b.json"
    try:
        with TimedServer(Behaviour(itl_s=0.005, prefill_s_per_token=0.00001)) as srv:
            proc = _bench("--no-power", "--power-from", f"http://127.0.0.1:{port}", "--json", str(out), url=srv.url)
    finally:
        exp.stop()
        sampler.stop()
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    (node,) = doc["host"]["nodes"]
    assert (node["name"], node["exporter"], node["power_sources"][0]["id"]) == (
        "spark-b",
        "precmon",
        "spark-b/fake:sys",
    )
    (v,) = doc["variants"]
    assert v["metrics"]["power_decode_w"] == pytest.approx(55.0, rel=0.05)
    assert [n["node"] for n in v["power_by_node"]] == ["spark-b"]  # --no-power: this machine is not a node
