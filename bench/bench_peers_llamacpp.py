#!/usr/bin/env python3
"""precmon vs llama-benchy vs llama-server's own timings: one real llama-server, quiet and loaded.

One command (`python bench/bench_peers_llamacpp.py --write`, about 2-6 minutes): starts one
llama-server from the test bed (tiny Q4_K_M, `--cache-ram 0`), then, in each condition (quiet;
then beside bounded CPU-burner processes), runs llama-benchy and `precmon bench` alternately,
round by round (the first tool alternates too), with the same prompt and output length, the
prompt cache off (llama-benchy `--no-cache` = `cache_prompt: false` + a unique suffix; precmon
busts the cache itself) and greedy sampling (llama-benchy `--extra-body temperature=0`).
Every request of either tool is matched with llama-server's own timing of it, read from the
server's log (`print_timing`: prompt eval = TTFT's server part, eval = decode), one source
for both tools; precmon's own reading of `timings` is kept as a cross-check. Per tool: decode
tok/s and TTFT, each vs the server's, the tool's CPU while its requests were served
(peer_tools.CpuWhileServing), and whether precmon said `host-busy:`. Results: a JSON file
and docs/benchmarks.md, section "peers-llamacpp".

llama-benchy 0.4.0 runs offline in its own venv in the precmon cache: its tokenizer is the
tiny model's `tokenizer.json` (the vLLM test bed writes it from the same llama-spm vocabulary the
GGUF models carry), `--skip-coherence` (random weights cannot say Paris), and its corpus
("book") is pre-seeded in ~/.cache/llama-benchy/ under the md5 of the `--book-url` it is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_client import write_section  # noqa: E402
from peer_parse import benchy_requests, decode_requests, llama_log_timings, precmon_requests  # noqa: E402
from peer_tools import CpuWhileServing, busy_cores, host_load, median, peer_venv, say, start_burners, stop_burners  # noqa: E402

from precmon.testbed.llama_build import build_llama  # noqa: E402
from precmon.testbed.models import make_models  # noqa: E402
from precmon.testbed.server import start_llama_server  # noqa: E402
from precmon.testbed.vllm_model import TINY, make_vllm_models  # noqa: E402

BENCHY = "llama-benchy==0.4.0"
BOOK_URL = "precmon-local-corpus"  # never fetched: the corpus is seeded under its md5
TOOLS = ("llama-benchy", "precmon")
BASE_TOOL = "precmon (base)"  # --base-src: another tree's precmon, in the same rounds (a before/after)


def seed_corpus() -> None:
    """llama-benchy reads ~/.cache/llama-benchy/<md5(book url)>.txt instead of downloading."""
    cache = Path.home() / ".cache" / "llama-benchy"
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / f"{hashlib.md5(BOOK_URL.encode()).hexdigest()}.txt"
    if not dest.exists():
        # any English prose will do for random weights: CPython's licence text, shipped with Python
        licence = Path(os.__file__).parent / "LICENSE.txt"
        dest.write_text(licence.read_text() if licence.exists() else (__doc__ or "") * 20)


def run_benchy(venv: Path, url: str, tokenizer: Path, a: argparse.Namespace, out: Path, cpu: CpuWhileServing) -> dict:
    argv = [
        str(venv / "bin" / "llama-benchy"),
        *("--base-url", f"{url}/v1", "--model", "tiny", "--tokenizer", str(tokenizer), "--book-url", BOOK_URL),
        *("--pp", str(a.prompt_tokens), "--tg", str(a.output_tokens), "--runs", str(a.requests)),
        *("--exact-tg", "--no-cache", "--no-warmup", "--skip-coherence", "--format", "json"),
        *("--extra-body", "temperature=0"),  # greedy, as precmon samples: llama.cpp's default sampler costs more
        *("--save-result", str(out)),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=out.parent)
    cpu.tool_pid = proc.pid
    log, _ = proc.communicate(timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"llama-benchy failed (exit {proc.returncode}): {log.decode(errors='replace')[-800:]}")
    return benchy_requests(json.loads(out.read_text()))


def run_precmon(url: str, a: argparse.Namespace, out: Path, cpu: CpuWhileServing, src: Path = ROOT / "src") -> dict:
    p, t = str(a.prompt_tokens), str(a.output_tokens)
    argv = [sys.executable, "-m", "precmon", "bench", "--url", url, "--output-tokens", t]
    argv += ["--decode-prompt-tokens", p, "--prefill-tokens", p, "--ttft-tokens", p, "--repeats", str(a.requests)]
    argv += ["--warmup", "0", "--idle-s", "0", "--no-power", "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    cpu.tool_pid = proc.pid
    log, _ = proc.communicate(timeout=600)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"precmon bench failed (exit {proc.returncode}): {log.decode(errors='replace')[-800:]}")
    return precmon_requests(json.loads(out.read_text()))


def one_round(tool: str, ctx: dict, a: argparse.Namespace, tag: str) -> dict:
    """One tool's requests, matched with the server's log lines written meanwhile."""
    log: Path = ctx["log"]
    offset = log.stat().st_size
    out = ctx["tmp"] / f"{tag}-{tool}.json"
    with CpuWhileServing(ctx["server_pid"]) as cpu:
        if tool == "llama-benchy":
            got = run_benchy(ctx["venv"], ctx["url"], ctx["tokenizer"], a, out, cpu)
        elif tool == BASE_TOOL:
            got = run_precmon(ctx["url"], a, out, cpu, src=a.base_src)
        else:
            got = run_precmon(ctx["url"], a, out, cpu)
    with open(log, "rb") as f:
        f.seek(offset)
        server = decode_requests(llama_log_timings(f.read().decode(errors="replace")), a.output_tokens)
    got["log_decode_tok_s"] = [s["predicted_per_second"] for s in server]
    got["log_ttft_ms"] = [s["prompt_ms"] for s in server]
    got["log_prompt_n"] = [s["prompt_n"] for s in server]
    got["cpu"] = cpu.result()
    if len(server) != len(got["decode_tok_s"]):
        say(f"{tag} {tool}: {len(got['decode_tok_s'])} requests but {len(server)} server timings: not matched")
    return got


def summarize(rounds: list[dict]) -> dict:
    """Medians over all requests of a tool in one condition, and of per-request ratios to the server."""

    def cat(key: str) -> list[float]:
        return [v for r in rounds for v in r.get(key, [])]

    pairs = [(c, s) for r in rounds for c, s in zip(r["decode_tok_s"], r["log_decode_tok_s"], strict=False)]
    ttft = [(c, s) for r in rounds for c, s in zip(r["ttft_ms"], r["log_ttft_ms"], strict=False)]
    return {
        "requests": len(cat("decode_tok_s")),
        "decode_tok_s": median(cat("decode_tok_s")),
        "server_decode_tok_s": median(cat("log_decode_tok_s")),
        "decode_ratio": median([c / s for c, s in pairs if s > 0]),
        "ttft_ms": median(cat("ttft_ms")),
        "server_ttft_ms": median(cat("log_ttft_ms")),
        "ttft_excess_ms": median([c - s for c, s in ttft]),
        "prompt_tokens": median(cat("log_prompt_n")),
        "tool_cores": median([r["cpu"]["tool_cores"] for r in rounds]),
        # precmon's own reading of `timings` from its stream, beside the log's figure
        "precmon_read_server_decode_tok_s": median(cat("server_decode_tok_s")) if cat("server_decode_tok_s") else None,
        "host_busy_flagged": [any(w.startswith("host-busy:") for w in r.get("warnings", [])) for r in rounds]
        if "warnings" in rounds[0]
        else None,
    }


def table(summary: dict, a: argparse.Namespace) -> str:
    rows = [
        "| condition | tool | requests | decode tok/s | server's decode tok/s | tool ÷ server | TTFT ms | "
        "server prompt ms | TTFT − server ms | tool CPU (cores) | precmon said host-busy |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for cond, tools in summary.items():
        for tool, s in tools.items():
            flagged = s["host_busy_flagged"]
            flag = "—" if flagged is None else f"{sum(flagged)} of {len(flagged)} rounds"
            rows.append(
                f"| {cond} | {tool} | {s['requests']} | {s['decode_tok_s']:.1f} | {s['server_decode_tok_s']:.1f} | "
                f"{s['decode_ratio']:.3f} | {s['ttft_ms']:.1f} | {s['server_ttft_ms']:.1f} | "
                f"{s['ttft_excess_ms']:.1f} | {s['tool_cores']:.3f} | {flag} |"
            )
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3, help="rounds per condition, tools alternating (3)")
    p.add_argument("--requests", type=int, default=3, help="measured requests per tool per round (3)")
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--burners", type=int, default=1, help="busy-loop processes in the loaded condition (1)")
    p.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "precmon-peers-llamacpp.json")
    p.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    p.add_argument(
        "--base-src",
        type=Path,
        help="the src/ folder of another precmon tree (e.g. a git worktree of an older commit): run as a third "
        "tool in the same rounds, so a before/after is measured side by side",
    )
    p.add_argument("--conditions", default="quiet,loaded", help="which conditions to run (quiet,loaded)")
    p.add_argument("--from-json", type=Path, help="only render the section from a results file")
    a = p.parse_args()
    if a.from_json:
        text = render(json.loads(a.from_json.read_text()))
        if a.write:
            write_section(ROOT / "docs" / "benchmarks.md", "peers-llamacpp", text)
        print(text)
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server (and burners) on kill
    started = time.monotonic()
    build = build_llama("cpu")
    model = make_models("tiny", build=build)["Q4_K_M"]
    tokenizer = make_vllm_models(model=TINY)["bf16"] / "tokenizer.json"
    venv = peer_venv("llama-benchy-0.4.0", BENCHY)
    seed_corpus()
    load_before = host_load()
    raw: dict[str, dict[str, list[dict]]] = {}
    background: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        server = start_llama_server(build.tool("llama-server"), tmp / "server.log", model=model, ctx_tokens=2048)
        ctx = {"log": tmp / "server.log", "tmp": tmp, "url": server.url, "venv": venv, "tokenizer": tokenizer}
        ctx["server_pid"] = server.proc.pid
        try:
            tools = (*TOOLS, BASE_TOOL) if a.base_src else TOOLS
            for cond in a.conditions.split(","):
                burners = start_burners(a.burners, 600) if cond == "loaded" else []
                try:
                    background[cond] = busy_cores()  # the machine's load with no request running
                    raw[cond] = {t: [] for t in tools}
                    for i in range(a.rounds):
                        order = tools if i % 2 == 0 else tools[::-1]
                        for tool in order:
                            raw[cond][tool].append(one_round(tool, ctx, a, f"{cond}{i}"))
                            say(f"{cond} round {i + 1}/{a.rounds} {tool}: decode {raw[cond][tool][-1]['decode_tok_s']}")
                finally:
                    stop_burners(burners)
        finally:
            server.stop()
    summary = {cond: {t: summarize(rs) for t, rs in tools.items()} for cond, tools in raw.items()}
    doc = {
        "settings": vars(a) | {"json": str(a.json), "from_json": None, "base_src": str(a.base_src or "") or None},
        "host": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "load_before": load_before},
        "peer": BENCHY,
        "summary": summary,
        "background_cores": background,
        "rounds": raw,
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    a.json.write_text(json.dumps(doc, indent=1, default=str))
    text = render(doc)
    if a.write:
        write_section(ROOT / "docs" / "benchmarks.md", "peers-llamacpp", text)
    say(f"results: {a.json}")
    print(text)
    return 0


def section(summary: dict, a: argparse.Namespace, load: str, elapsed_s: float, background: dict) -> str:
    seen = ", ".join(f"{cond} {cores:.2f}" for cond, cores in background.items()) or "not measured"
    return "\n".join(
        [
            "## Peers on llama.cpp: precmon vs llama-benchy vs the server's own timings",
            "",
            f"`python bench/bench_peers_llamacpp.py --write` on {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}, {BENCHY}; {load} before the run; "
            f"{elapsed_s:.0f} s. One llama-server (tiny Q4_K_M, `--cache-ram 0`), prompt {a.prompt_tokens} "
            f"tokens, output {a.output_tokens} tokens, greedy, {a.requests} requests per tool per round, "
            f"{a.rounds} rounds per condition with the tools alternating; loaded = {a.burners} busy-loop "
            "process(es) beside the server. Medians over all requests; ratios and differences are per "
            "request against llama-server's log line for that same request. Busy cores of the whole "
            f"machine with no request running, measured for 3 s as each condition began: {seen}.",
            "",
            table(summary, a),
            "",
            "How the columns are read: *server's decode tok/s* is the `tokens per second` llama-server "
            "prints for the request ((tokens − 1) ÷ eval time, the `timings.predicted_per_second` figure); "
            "*server prompt ms* is its prompt eval time, the server's part of TTFT. llama-benchy's decode "
            "is its per-request `tg` (tokens after the first ÷ last − first token time, precmon's "
            "definition) and its TTFT its `e2e_ttft` (request start → first content chunk, as precmon's). "
            "llama-benchy speaks only `/v1/chat/completions` (its prompts are "
            f"{a.prompt_tokens}–{a.prompt_tokens + 2} tokens after the chat template, by the server's count), "
            f"precmon `/v1/completions` (exactly {a.prompt_tokens}). precmon's run also holds its prefill and "
            "TTFT probes (one-token requests of the same prompt length): they are in its CPU figure, not "
            "in the decode/TTFT rows. *Tool CPU* = the tool's process tree's CPU time ÷ the time the server "
            "used more than 0.3 cores (sampled at 20 Hz), so start-up (imports, llama-benchy tokenizing its "
            "corpus) is not counted. *precmon said host-busy* counts its rounds with a `host-busy:` warning.",
        ]
    )


def render(doc: dict) -> str:
    """The docs section from a results file (`--from-json`), without measuring again."""
    a = argparse.Namespace(**doc["settings"])
    summary = {cond: {t: summarize(rs) for t, rs in tools.items()} for cond, tools in doc["rounds"].items()}
    return section(summary, a, doc["host"]["load_before"], doc["elapsed_s"], doc.get("background_cores", {}))


if __name__ == "__main__":
    raise SystemExit(main())
