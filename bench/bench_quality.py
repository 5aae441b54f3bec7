"""What quality scoring costs next to the speed plan it follows (docs/design.md §4 "Quality").

Per rung of the real model's ladder (SmolLM2-135M-Instruct: F16 baseline, Q8_0, Q4_0, NVFP4,
MXFP4; `--tiny` for the synthetic tiny models), one llama-server each: bench's quick speed plan
(`BenchSettings.quick()`), then quality at the defaults (`QualitySettings()`: P = 512 in
llama-perplexity's windows, adaptive top-K; vLLM asked at most 50 a position), timed apart:
wall seconds, precmon's own CPU seconds and the server's CPU seconds (psutil, the server process
and its children), and quality's share of the variant's wall time
(quality ÷ (plan + quality)). The plan at bench's defaults (what a sweep runs per variant) runs
only on `--defaults-on` (F16), and every variant's share is also given against that wall. With
`--vllm`, the vLLM test bed's bf16 SmolLM2 too (one start, `--max-logprobs 1000` as the test bed
starts it; run the script under `flock /work/wt/vllm.lock` then). The goal: under 10% at
defaults. Prints a Markdown table (and writes it with `--out FILE`). Not a test: it takes minutes.

    PYTHONPATH=src python bench/bench_quality.py [--vllm] [--out FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from precmon import api
from precmon.core.schema import VariantResult
from precmon.core.settings import BenchSettings
from precmon.measure.quality.reference import Reference
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.servers.detect import make_server
from precmon.testbed.llama_build import build_llama
from precmon.testbed.models import make_coarse_models, make_models
from precmon.testbed.real_model import make_ladder
from precmon.testbed.server import start_llama_server

LABELS = ("F16", "Q8_0", "Q4_0", "NVFP4", "MXFP4")
TINY_LABELS = ("F16", "Q8_0", "Q4_K_M", "Q2_K")
CTX_TOKENS = 20480  # the tiny models: the default plan's largest prefill (16384) plus its output
REAL_CTX_TOKENS = 8192  # SmolLM2's own context: the default plan's larger prompts are clipped, as for a user


def server_cpu_s(pid: int) -> float:
    """CPU seconds of a server process and its children so far (0 when it is gone)."""
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def timed(fn: Callable[[], Any], pid: int) -> tuple[Any, float, float, float]:
    """(fn(), wall s, this process's CPU s, the server's CPU s)."""
    wall0, cpu0, srv0 = time.monotonic(), time.process_time(), server_cpu_s(pid)
    out = fn()
    return out, time.monotonic() - wall0, time.process_time() - cpu0, server_cpu_s(pid) - srv0


def measure(
    label: str, url: str, pid: int, model: str | None, ref: Reference | None, qs: QualitySettings, defaults: bool
) -> dict:
    srv = make_server(url)
    default_s = None

    def plan(settings: BenchSettings) -> VariantResult:
        with tempfile.TemporaryDirectory() as tmp:
            ended = api.measure(url, settings=settings, model=model, label=label, out=Path(tmp) / "out")
        return ended.doc.variants[0]

    if defaults:
        _, default_s, _, _ = timed(lambda: plan(BenchSettings()), pid)
    result, plan_s, _, plan_srv_cpu = timed(lambda: plan(BenchSettings.quick()), pid)
    out, q_s, q_cpu, q_srv_cpu = timed(lambda: measure_quality(srv, qs, label=label, model=model, reference=ref), pid)
    srv.close()
    return {
        "label": label,
        "status": result.status,
        "plan_s": plan_s,
        "default_s": default_s,
        "plan_srv_cpu": plan_srv_cpu,
        "quality_s": q_s,
        "client_cpu": q_cpu,
        "srv_cpu": q_srv_cpu,
        "share": q_s / (plan_s + q_s),
        "reason": out.info.reason,
        "positions": out.info.positions,
        "top_k": out.info.top_k,
        "windows": out.info.windows,
        "kld": out.metrics["quality_kld_mean"],
        "top1": out.metrics["quality_top1_agree"],
        "reference": out.reference,
    }


def llama_rows(qs: QualitySettings, work: Path, defaults_on: str, labels: list[str], tiny: bool) -> list[dict]:
    build = build_llama("cpu")
    if tiny:
        models = dict(make_models("tiny", build=build)) | make_coarse_models("tiny", build=build)
    else:
        models = make_ladder(build)
    rows, ref = [], None
    for label in labels:
        proc = start_llama_server(
            build.tool("llama-server"),
            work / f"{label}.log",
            model=models[label],
            ctx_tokens=CTX_TOKENS if tiny else REAL_CTX_TOKENS,
        )
        try:
            assert proc.proc is not None
            row = measure(label, proc.url, proc.proc.pid, None, ref, qs, label == defaults_on)
        finally:
            proc.stop()
        ref = ref or row["reference"]
        rows.append(row | {"engine": "llama.cpp"})
    return rows


def vllm_row(qs: QualitySettings, work: Path, defaults: bool) -> dict:
    from precmon.testbed.vllm_env import find_vllm_env
    from precmon.testbed.vllm_model import REAL, make_vllm_models
    from precmon.testbed.vllm_server import start_vllm_server

    env = find_vllm_env()
    assert env is not None, "no vLLM CPU venv in the precmon cache (see docs/testbed-vllm.md)"
    variant = REAL.variant("bf16")
    model_dir = make_vllm_models(env, model=REAL)[variant.name]
    proc = start_vllm_server(env, model_dir, variant, work / "vllm.log", extra=("--enforce-eager",))
    try:
        assert proc.proc is not None
        row = measure("bf16", proc.url, proc.proc.pid, variant.served_name, None, qs, defaults)
        return row | {"engine": "vLLM"}
    finally:
        proc.stop()


def table(rows: list[dict], qs: QualitySettings) -> str:
    defaults = {r["engine"]: r["default_s"] for r in rows if r["default_s"] is not None}
    lines = [
        f"P = {qs.positions}, K = {qs.top_k}"
        + (
            f" (adaptive: to {qs.target_mass} of the baseline's probability, at most {qs.top_k_max})"
            if qs.target_mass
            else ""
        )
        + ". Default plan wall: "
        + (", ".join(f"{e} {s:.0f} s" for e, s in defaults.items()) or "not run")
        + ".",
        "",
        "| engine | variant | plan status | positions (windows) | most K asked | quick plan (s) | quality (s) "
        "| share of quick-plan wall | share of default-plan wall | precmon CPU (s) | server CPU (s) | mean KL (nats) "
        "| top-1 |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        d = defaults.get(r["engine"])
        d_share = f"{r['quality_s'] / (d + r['quality_s']):.1%}" if d else "—"
        lines.append(
            f"| {r['engine']} | {r['label']} | {r['status']} | {r['positions']} ({r['windows'] or 'from-start'}) "
            f"| {r['top_k']} | {r['plan_s']:.1f} | {r['quality_s']:.2f} "
            f"| {r['share']:.1%} | {d_share} | {r['client_cpu']:.2f} | {r['srv_cpu']:.2f} | {r['kld']} | {r['top1']} |"
            + (f" n/a: {r['reason']}" if r["reason"] else "")
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--positions", type=int, default=QualitySettings().positions)
    p.add_argument("--top-k", type=int, default=QualitySettings().top_k, help="at least this many (adaptive)")
    p.add_argument("--tiny", action="store_true", help="the synthetic tiny models instead of the real ladder")
    p.add_argument("--vllm", action="store_true", help="the vLLM test bed's bf16 SmolLM2 too (under the vLLM lock)")
    p.add_argument("--no-llama", action="store_true", help="skip the llama.cpp models")
    p.add_argument("--defaults-on", default="F16", help="the variant that also runs the default plan ('' for none)")
    p.add_argument("--labels", default=None, help="llama.cpp variants, the baseline first (default: all)")
    p.add_argument("--out", type=Path, default=None)
    a = p.parse_args()
    qs = QualitySettings(a.positions, a.top_k)
    work = Path(tempfile.mkdtemp(prefix="precmon-bench-quality-"))
    labels = a.labels.split(",") if a.labels else list(TINY_LABELS if a.tiny else LABELS)
    rows = [] if a.no_llama else llama_rows(qs, work, a.defaults_on, labels, a.tiny)
    if a.vllm:
        rows.append(vllm_row(qs, work, a.defaults_on == "bf16"))
    text = table(rows, qs)
    print(text)
    if a.out:
        a.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
