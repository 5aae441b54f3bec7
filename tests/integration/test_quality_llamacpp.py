"""Quality scoring on the real llama-server with the synthetic models (docs/design.md §4 "Quality").

A launch-mode sweep (each server stopped before the next starts) of F16, Q8_0, Q4_K_M, Q2_K and
F16 again, quality on: the baseline writes quality-ref.json, the others score against it. KL must
be > 0 for Q8_0, rise and top-1 agreement fall as bits fall, and the baseline against itself read
0. Then `precmon bench --quality-ref` scores a server against that file. P and K are small and the
positions run from the text's start (`quality_convention = "from-start"`: one llama-perplexity
window is 255 positions; tests/integration/test_quality_truth_llamacpp.py scores those, at the
defaults), so the whole module stays well under a minute on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from precmon.measure.quality.adaptive import TOP_K_MAX
from precmon.servers.launch import free_port
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.testbed.models import make_coarse_models
from precmon.testbed.server import llama_server_argv, start_llama_server

pytestmark = pytest.mark.integration

POSITIONS, TOP_K = 48, 10

SPEED = """\
[defaults]
url = "http://127.0.0.1:1"
output_tokens = 8
decode_prompt_tokens = 16
prefill_tokens = [64]
ttft_tokens = 64
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0
quality = true
quality_positions = {p}
quality_top_k = {k}
quality_convention = "from-start"
"""


@pytest.fixture(scope="module")
def models(llama_build, tiny_models):
    return dict(tiny_models) | make_coarse_models("tiny", build=llama_build)


VARIANTS = (("F16", "F16"), ("Q8_0", "Q8_0"), ("Q4_K_M", "Q4_K_M"), ("Q2_K", "Q2_K"), ("F16-again", "F16"))


def sweep_text(llama_build, models, variants) -> str:
    text = SPEED.format(p=POSITIONS, k=TOP_K)
    for label, model in variants:
        port = free_port()
        argv = llama_server_argv(llama_build.tool("llama-server"), port, model=models[model], ctx_tokens=1024)
        text += (
            f'\n[[variant]]\nlabel = "{label}"\nprecision = "{model.lower()}"\nurl = "http://127.0.0.1:{port}"\n'
            f"launch = {json.dumps(argv)}\nready_timeout_s = 60\n"
        )
    return text


@pytest.fixture(scope="module")
def sweep(llama_build, models, tmp_path_factory):
    out = tmp_path_factory.mktemp("quality-sweep")
    started = time.monotonic()
    doc = json.loads(SweepRunner(parse_spec(sweep_text(llama_build, models, VARIANTS)), out).run().read_text())
    return out, {v["label"]: v for v in doc["variants"]}, time.monotonic() - started


def test_resume_scores_a_new_variant_against_the_saved_reference(llama_build, models, sweep, tmp_path):
    out, by, _ = sweep
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    for name in ("results.json", "journal.jsonl", "quality-ref.json"):
        (resumed / name).write_bytes((out / name).read_bytes())
    text = sweep_text(llama_build, models, [("F16", "F16"), ("Q4-late", "Q4_K_M")])
    doc = json.loads(SweepRunner(parse_spec(text), resumed, resume=True).run().read_text())
    late = next(v for v in doc["variants"] if v["label"] == "Q4-late")
    assert late["quality"]["baseline"] == "F16", late["quality"]
    kld = by["Q4_K_M"]["metrics"]["quality_kld_mean"]
    assert late["metrics"]["quality_kld_mean"] == pytest.approx(kld, rel=1e-3)


def test_kl_rises_and_top1_falls_as_bits_fall(sweep):
    _, by, seconds = sweep
    m = {label: v["metrics"] for label, v in by.items()}
    for label, v in by.items():
        assert v["status"] == "ok", (label, v["errors"])
        assert v["quality"]["baseline"] == "F16" and v["quality"]["positions"] == POSITIONS, v["quality"]
        # adaptive top-K: asked TOP_K_MAX, kept at least quality_top_k (all of them: a random model never holds 0.95)
        assert v["quality"]["top_k"] == TOP_K_MAX and "reason" not in v["quality"], v["quality"]
        assert v["quality"]["top_k_listed_mean"] >= TOP_K, v["quality"]
    assert m["Q8_0"]["quality_kld_mean"] > 0
    assert m["Q8_0"]["quality_kld_mean"] < m["Q4_K_M"]["quality_kld_mean"] < m["Q2_K"]["quality_kld_mean"]
    assert m["Q8_0"]["quality_kld_p99"] < m["Q4_K_M"]["quality_kld_p99"] < m["Q2_K"]["quality_kld_p99"]
    assert m["Q8_0"]["quality_top1_agree"] > m["Q4_K_M"]["quality_top1_agree"] > m["Q2_K"]["quality_top1_agree"]
    assert all(m[x]["quality_ppl"] > 1 for x in m)  # the text's own tokens: llama-server gives them
    print(
        f"\n[quality] sweep of 5 launched variants with quality at P={POSITIONS}, K={TOP_K}: {seconds:.1f} s;",
        {x: (m[x]["quality_kld_mean"], m[x]["quality_top1_agree"]) for x in m},
    )


def test_the_baseline_against_itself_is_zero_and_its_reference_was_reused(sweep):
    out, by, _ = sweep
    again = by["F16-again"]["metrics"]
    assert again["quality_kld_mean"] == pytest.approx(0.0, abs=1e-9)
    assert again["quality_top1_agree"] == 1.0
    assert again["quality_ppl"] == pytest.approx(by["F16"]["metrics"]["quality_ppl"], rel=1e-6)
    ref = json.loads((out / "quality-ref.json").read_text())
    assert ref["label"] == "F16" and len(ref["positions"]) == POSITIONS and len(ref["tokens"]) == POSITIONS + 1


def test_quality_requests_leave_the_speed_runs_alone(sweep):
    _, by, _ = sweep
    for v in by.values():  # no cache hit flagged, no extra run recorded: quality records no runs
        assert [r["phase"] for r in v["runs"]] == ["decode", "prefill", "ttft"]
        assert all(r["ok"] and not r.get("cached_tokens") for r in v["runs"])


def test_bench_scores_against_a_saved_reference(llama_build, models, sweep, tmp_path):
    out, by, _ = sweep
    server = start_llama_server(
        llama_build.tool("llama-server"), tmp_path / "q4.log", model=models["Q4_K_M"], ctx_tokens=1024
    )
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "precmon",
                "bench",
                "--url",
                server.url,
                "--quick",
                "--no-power",
                "--repeats",
                "1",
                "--prefill-tokens",
                "64",
                "--ttft-tokens",
                "64",
                "--output-tokens",
                "8",
                "--quality-ref",
                str(out / "quality-ref.json"),
                "--json",
                str(tmp_path / "b.json"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-2000:]
    v = json.loads((tmp_path / "b.json").read_text())["variants"][0]
    assert v["quality"]["baseline"] == "F16"
    assert v["metrics"]["quality_kld_mean"] == pytest.approx(by["Q4_K_M"]["metrics"]["quality_kld_mean"], rel=1e-3)
    assert "quality_reference" not in v  # it scored against one; it is not one
    assert "KL div vs F16" in proc.stdout
