"""A launch-mode sweep file over the vLLM test bed's precisions, for `precmon sweep`.

Each variant launches its own vLLM server (one at a time: the sweep stops each before the next)
with the argv and environment `vllm_server` uses, so a sweep measures exactly what the
integration tests start: bf16, fp16, W8A8 int8, AWQ-format int4, and bf16 with an fp8 KV cache,
of the real model (SmolLM2-135M-Instruct) unless a test asks for the tiny random one.
Ports are picked free when the file is written; a port taken since then fails that variant
("already answers"), never measures someone else's server.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from precmon.servers.launch import free_port
from precmon.testbed.llama_build import BuildError
from precmon.testbed.vllm_env import VllmEnv, VllmEnvError, install_vllm
from precmon.testbed.vllm_model import REAL, TINY, VllmModel, make_vllm_models
from precmon.testbed.vllm_server import vllm_server_argv, vllm_server_env


@dataclass(frozen=True)
class SweepEntry:
    label: str
    precision: str  # the tag a report names
    variant: str  # folder in the model cache
    flags: tuple[str, ...] = ()


SWEEP = (
    SweepEntry("bf16", "bf16", "bf16"),
    SweepEntry("fp16", "fp16", "fp16"),
    SweepEntry("W8A8 int8", "int8", "w8a8-int8"),
    SweepEntry("int4 RTN (AWQ)", "int4", "awq-int4"),  # AWQ's format, round-to-nearest: no AWQ search
    SweepEntry("bf16 + fp8 KV", "bf16/fp8-kv", "bf16", ("--kv-cache-dtype", "fp8")),
)
# --quick's plan (BenchSettings.quick), small enough for a 2-core CPU and a 2,048-token context
QUICK_PLAN = {
    "output_tokens": 64,
    "decode_prompt_tokens": 32,
    "prefill_tokens": [128, 512],
    "ttft_tokens": 512,
    "repeats": 2,
    "warmup": 1,
    "idle_s": 1.0,
    "timeout_s": 120.0,
}


#: [defaults] keys that score quality against bf16 (each variant's answer comes with it).
QUALITY_KEYS: dict[str, object] = {"quality": True, "baseline": "bf16", "quality_positions": 255}  # one window


def _toml(value: object) -> str:
    """A TOML value: JSON's strings, numbers and arrays are valid TOML for what we write."""
    return json.dumps(value)


def sweep_toml(
    env: VllmEnv,
    models: dict[str, Path],
    *,
    entries: Sequence[SweepEntry] = SWEEP,
    plan: Mapping[str, object] = QUICK_PLAN,
    model: VllmModel = REAL,
    eager: bool = False,
    ready_timeout_s: float = 600.0,
) -> str:
    """The sweep file's text: [defaults] with the plan (`--quick`'s), one launch variant per entry.

    Args:
        plan: keys of the sweep file's [defaults]: the bench plan, and quality keys where it scores
            quality (`precmon demo --engine vllm` passes its own).
        model: whose folders `models` are (the served names are `<family>-<variant>`).
        eager: add `--enforce-eager` (ready in ~35 s instead of 50-190 s; no torch.compile, so
            decode is slower and less like a production server's).
    """
    lines = ["# precmon sweep over the vLLM CPU test bed (python -m precmon.testbed.vllm_sweep)", "[defaults]"]
    lines += [f"{k} = {_toml(v)}" for k, v in plan.items()]
    lines += [f"ready_timeout_s = {_toml(ready_timeout_s)}", "cooldown_s = 0", ""]
    server_env = vllm_server_env()
    for e in entries:
        port = free_port()
        flags = (*e.flags, "--enforce-eager") if eager else e.flags
        argv = vllm_server_argv(env, models[e.variant], model.variant(e.variant), port, extra=flags)
        lines += [
            "[[variant]]",
            f"label = {_toml(e.label)}",
            f"precision = {_toml(e.precision)}",
            f"launch = {_toml(argv)}",
            f'url = "http://127.0.0.1:{port}"',
            "env = { " + ", ".join(f"{k} = {_toml(v)}" for k, v in server_env.items()) + " }",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="Write a precmon sweep file over the vLLM test bed's precisions.")
    p.add_argument("out", type=Path, help="the .toml to write")
    p.add_argument("--eager", action="store_true", help="start servers with --enforce-eager (faster start)")
    p.add_argument("--quality", action="store_true", help="score quality against bf16 and record answers")
    p.add_argument("--tiny", action="store_true", help="the tiny random-weight Llama instead of SmolLM2 (speed only)")
    a = p.parse_args(argv)
    model = TINY if a.tiny else REAL
    plan = {**QUICK_PLAN, **(QUALITY_KEYS if a.quality else {})}
    try:
        env = install_vllm()
        text = sweep_toml(env, make_vllm_models(env, model=model), plan=plan, model=model, eager=a.eager)
    except (VllmEnvError, BuildError) as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    a.out.write_text(text, encoding="utf-8")
    print(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
