"""One way to measure one variant (`sweep/execute.py run_variant`): the CLI's bench, the TUI's `b`
and the sweep runner name a variant by one rule and leave the same thing behind when a Ctrl-C
cuts the plan short. Against `TimedServer` (loopback, a llama.cpp-like fake whose model is
"fake-Q4_K_M", quantization Q4_K_M)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import precmon.sweep.execute as execute
from precmon.cli.commands import bench_cmd
from precmon.cli.parser import build_parser
from precmon.core.schema import VariantResult, to_json
from precmon.core.stops import INTERRUPTED
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.labels.true_label import NOT_LAUNCHED
from precmon.measure.plan import variant_label
from precmon.servers.base import ModelInfo
from precmon.servers.detect import make_server
from precmon.sweep.execute import Context, Job, run_variant
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = ["--output-tokens", "4", "--decode-prompt-tokens", "8", "--prefill-tokens", "32", "--ttft-tokens", "48"]
PLAN += ["--repeats", "2", "--warmup", "0", "--idle-s", "0", "--no-power"]
SETTINGS = BenchSettings(
    output_tokens=4, decode_prompt_tokens=8, prefill_tokens=[32], ttft_tokens=48, repeats=2, warmup=0, idle_s=0
)


def test_the_one_label_rule():
    info = ModelInfo(name="/models/tiny-F16.gguf", quantization="F16")
    assert variant_label("mine", "m", info) == "mine"  # the user's label first
    assert variant_label(None, "m", info) == "m"  # then the model asked for
    assert variant_label(None, None, info) == "F16"  # then the server's quantization name
    assert variant_label(None, None, ModelInfo(name="/models/tiny.gguf")) == "tiny"  # then its file name
    assert variant_label(None, None, None) == "server"


def _job(url: str, **kw) -> Job:
    return Job(SETTINGS, lambda: make_server(url, kind="llamacpp", timeout_s=20), url, "llamacpp", **kw)


def test_a_model_asked_for_names_the_variant_whoever_benches_it():
    """The TUI's `b` called it by the server's quantization even when a model was asked for."""
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        named = run_variant(_job(srv.url, model="fake-Q4_K_M"), Context()).result.label
        unnamed = run_variant(_job(srv.url), Context()).result.label
    assert (named, unnamed) == ("fake-Q4_K_M", "Q4_K_M")


class _CtrlCAfterTwoRuns(Bench):
    """Ctrl-C (a KeyboardInterrupt) lands once two runs have been recorded."""

    def _record(self, run):
        super()._record(run)
        if len(self.result.runs) == 2:
            raise KeyboardInterrupt


def _variant(doc: dict) -> tuple:
    (v,) = doc["variants"]
    return v["status"], [e for e in v["errors"] if "interrupted" in e], [(r["phase"], r["ok"]) for r in v["runs"]]


def test_ctrl_c_leaves_the_same_partial_variant_from_bench_and_from_a_sweep(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "Bench", _CtrlCAfterTwoRuns)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        args = build_parser().parse_args(
            ["bench", "--url", srv.url, "--label", "A", *PLAN, "--json", str(tmp_path / "b.json")]
        )
        assert bench_cmd.run(args) == 130
        spec = parse_spec(
            f'[defaults]\nurl = "{srv.url}"\nserver = "llamacpp"\noutput_tokens = 4\ndecode_prompt_tokens = 8\n'
            "prefill_tokens = [32]\nttft_tokens = 48\nrepeats = 2\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\n"
            '\n[[variant]]\nlabel = "A"\nprecision = "int4"\nmodel = "fake-Q4_K_M"\n'
        )
        runner = SweepRunner(spec, tmp_path / "sweep")
        swept = json.loads(runner.run().read_text())
    benched = json.loads((tmp_path / "b.json").read_text())
    assert runner.interrupted
    assert _variant(benched) == _variant(swept) == ("partial", [INTERRUPTED], [("decode", True), ("decode", True)])


class _BreaksAfterOneRun(Bench):
    def _record(self, run):
        super()._record(run)
        raise KeyError("choices")


@pytest.mark.parametrize("caller", ["run_variant", "sweep"])
def test_an_unexpected_error_fails_the_variant_keeping_its_runs(tmp_path, monkeypatch, caller):
    monkeypatch.setattr(execute, "Bench", _BreaksAfterOneRun)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        if caller == "run_variant":
            outcome = run_variant(_job(srv.url), Context())
            assert outcome.crashed and outcome.reached
            v = to_json(outcome.result)
        else:
            spec = parse_spec(
                f'[defaults]\nurl = "{srv.url}"\nidle_s = 0\n\n[[variant]]\nlabel = "A"\nprecision = "x"\nmodel = "fake-Q4_K_M"\n'
            )
            (v,) = json.loads(SweepRunner(spec, tmp_path).run().read_text())["variants"]
    assert v["status"] == "failed" and v["errors"][0] == "KeyError: 'choices'" and len(v["runs"]) == 1


def test_a_server_that_is_not_there_is_not_reached_and_names_why():
    outcome = run_variant(_job("http://127.0.0.1:9"), Context())
    assert not outcome.reached and outcome.result.status == "failed" and outcome.result.errors


def test_the_compute_path_is_read_from_a_launched_vllm_servers_log_and_missing_one_says_why(tmp_path):
    """`_compute_path` (called by run_variant with the launched server's log, or None): vLLM's log
    is read as llama.cpp's is; a vLLM server precmon did not start records why there is none."""
    log = tmp_path / "vllm.log"
    log.write_text((Path(__file__).parents[1] / "servers/data/vllm_cpu_avx512_w8a8_int8_started.log").read_text())
    launched = VariantResult("int8", "int8", "m")
    execute._compute_path(launched, "vllm", log)
    assert launched.compute_path["engine"] == "vLLM"
    assert launched.compute_path["kernels"][0]["kernel"] == "CPUInt8ScaledMMLinearKernel"
    remote = VariantResult("int8", "int8", "m")
    execute._compute_path(remote, "vllm", None)
    assert remote.compute_path == {"reason": NOT_LAUNCHED["vllm"]}
