"""A llama-server serving the synthetic models: single-model or router mode."""

from __future__ import annotations

from pathlib import Path

from precmon.servers.launch import ServerProcess, free_port


def llama_server_argv(
    binary: Path,
    port: int,
    *,
    model: Path | None = None,
    models_dir: Path | None = None,
    ctx_tokens: int = 4096,
    threads: int | None = None,
    metrics: bool = True,
    extra: list[str] | None = None,
) -> list[str]:
    """argv for llama-server; exactly one of `model` / `models_dir` (router mode)."""
    # --cache-ram 0: llama-server's host prompt cache copies the previous prompt's KV state out on
    # every new task; with cache_prompt off that copy is pure overhead in TTFT (measured: 14 → 50 ms
    # at 4096 tokens on the tiny CPU model, 0.1–0.4 s on an 8 B model on an H200).
    argv = [
        str(binary),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(ctx_tokens),
        "-np",
        "1",
        "--cache-ram",
        "0",
    ]
    if model is not None:
        argv += ["-m", str(model)]
    elif models_dir is not None:
        argv += ["--models-dir", str(models_dir), "--models-max", "1"]
    else:
        raise ValueError("give model or models_dir")
    if threads:
        argv += ["-t", str(threads)]
    if metrics:
        argv.append("--metrics")
    return argv + list(extra or [])


def start_llama_server(
    binary: Path, log_path: Path, *, port: int | None = None, ready_timeout_s: float = 120.0, **kwargs
) -> ServerProcess:
    port = port or free_port()
    proc = ServerProcess(
        llama_server_argv(binary, port, **kwargs),
        f"http://127.0.0.1:{port}",
        log_path,
        ready_timeout_s=ready_timeout_s,
        health_paths=("/health",),
    )
    proc.start()
    try:
        proc.wait_ready()
    except BaseException:
        proc.stop()
        raise
    return proc
