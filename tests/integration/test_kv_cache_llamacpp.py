"""KV-cache precision as a variant axis on the real llama-server: a launch sweep over f16 and
q8_0 KV (`-ctk q8_0 -ctv q8_0 -fa on`), both `ok`, the declared type recorded and read back from
the server's own log (`-lv 4`); and a server started with another type than declared (through
llama-server's LLAMA_ARG_CACHE_TYPE_K environment variable, which the argv check cannot see) is
named by a `kv-cache-mismatch:` warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precmon.report.export import render
from precmon.report.load import load_document
from precmon.servers.launch import free_port
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec

pytestmark = pytest.mark.integration

QUICK = """\
[defaults]
output_tokens = 16
decode_prompt_tokens = 16
prefill_tokens = [64]
ttft_tokens = 64
repeats = 2
warmup = 1
idle_s = 0.2
cooldown_s = 0
"""


def kv_variant(label: str, kv: str, argv: list[str], port: int, env: dict[str, str] | None = None) -> str:
    text = f'\n[[variant]]\nlabel = "{label}"\nprecision = "int4"\nkv_cache_dtype = "{kv}"\n'
    text += f'url = "http://127.0.0.1:{port}"\nready_timeout_s = 60\nlaunch = {json.dumps(argv)}\n'
    if env:
        text += "env = {" + ", ".join(f'{k} = "{v}"' for k, v in env.items()) + "}\n"
    return text


def server_argv(llama_build, model: Path, port: int, *kv: str) -> list[str]:
    exe = str(llama_build.tool("llama-server"))
    return [
        exe,
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "1024",
        "-np",
        "1",
        "-lv",
        "4",
        *kv,
    ]


def test_kv_cache_sweep_f16_vs_q8_0_recorded_and_read_back(llama_build, tiny_models, tmp_path):
    model = tiny_models["Q4_K_M"]
    p1, p2, p3 = free_port(), free_port(), free_port()
    text = (
        QUICK
        + kv_variant("KV-F16", "f16", server_argv(llama_build, model, p1), p1)
        + kv_variant(
            "KV-Q8", "q8_0", server_argv(llama_build, model, p2, "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"), p2
        )
        + kv_variant("KV-LIES", "f16", server_argv(llama_build, model, p3), p3, env={"LLAMA_ARG_CACHE_TYPE_K": "q4_0"})
    )
    path = SweepRunner(parse_spec(text), tmp_path).run()
    doc = json.loads(path.read_text())
    by = {v["label"]: v for v in doc["variants"]}
    for label, kv in (("KV-F16", "f16"), ("KV-Q8", "q8_0")):
        v = by[label]
        assert v["status"] == "ok", v["errors"]
        assert v["kv_cache_dtype"] == kv
        back = v["kv_cache_read_back"]
        assert (back["k"], back["v"], back["from"]) == (kv, kv, "the server's log (llama_kv_cache)")
        assert not any(w.startswith("kv-cache-mismatch:") for w in v.get("warnings") or [])
        assert v["metrics"]["decode_tok_s"] > 0
    assert by["KV-Q8"]["server"]["launch_flags"]["cache_type_k"] == "q8_0"
    # what q8_0 KV buys: 8.5 of 16 bits per element plus block scales, about half the bytes per token
    f16_b, q8_b = (by[x]["kv_cache_read_back"]["kv_bytes_per_token"] for x in ("KV-F16", "KV-Q8"))
    print(f"\nKV bytes per context token: f16 {f16_b}, q8_0 {q8_b}")
    assert 0.5 < q8_b / f16_b < 0.6
    # the same figures as KV memory (sweep/kv_memory.py): -c 1024 -np 1 holds 1,024 tokens either way
    mem = {x: by[x]["kv_memory"] for x in ("KV-F16", "KV-Q8")}
    print(f"KV memory: f16 {mem['KV-F16']}, q8_0 {mem['KV-Q8']}")
    for label, b in (("KV-F16", f16_b), ("KV-Q8", q8_b)):
        m = by[label]["metrics"]
        assert m["kv_bytes_per_token"] == b and mem[label]["from"] == "the server's log (llama_kv_cache)"
        assert m["kv_capacity_tokens"] == m["kv_longest_context_tokens"] == 1024
        assert mem[label]["context_tokens"] == 1024 and m["kv_max_concurrency_at_ctx"] == 1.0
    assert by["KV-Q8"]["metrics"]["kv_bytes_per_token"] < by["KV-F16"]["metrics"]["kv_bytes_per_token"]
    lies = by["KV-LIES"]
    assert lies["kv_cache_read_back"]["k"] == "q4_0"
    mismatch = [w for w in lies["warnings"] if w.startswith("kv-cache-mismatch:")]
    assert mismatch == [
        "kv-cache-mismatch: variant 'KV-LIES' declares kv_cache_dtype f16, the server's log (llama_kv_cache) "
        "says K q4_0, V f16"
    ]

    # the report's rows: q8_0 holds a 1K context in about half f16's MiB
    md = render(load_document(path), "md")
    row = next(line for line in md.splitlines() if line.startswith("| KV memory / 1K tokens (MiB) |"))
    print("\n" + row)
    assert "| 16.0 | **8.50** (−47%) |" in row, row  # the best in bold

    # the post-ready table: llama-bench's layout with the server's own model size and parameter count
    table = render(load_document(path), "llama-bench")
    print("\n" + table)
    rows = [line for line in table.splitlines() if "tg16" in line]
    assert len(rows) == 3 and all("37.30 MiB" in r and "60.04 M" in r and "| CPU " in r for r in rows), table
