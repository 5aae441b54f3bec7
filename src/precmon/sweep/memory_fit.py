"""How many users, and how long a context, fit in this box's memory at a variant's precision
(docs/design.md §4 "Memory fit"), from what was measured, never from a model's config.

Three measured inputs make the fit: the memory a server may hold here (`usable`), the weights'
bytes (the server's own model size, the one `memory_gb` shows) and the KV cache's bytes per context
token (`kv_bytes_per_token`, from the server's log: sweep/kv_memory.py). With F = usable − weights,
`users_at[C]` = ⌊F ÷ (C × KV)⌋ sequences of C tokens, and `context_for_users[U]` = ⌊F ÷ (U × KV)⌋
tokens each for U users, so weights + users × context × KV ≤ usable holds for every figure. The
runtime's own buffers (compute scratch, CUDA context) are not counted: an upper bound, as the
report says.

The usable memory is, on a discrete GPU that ran the model, what NVML says the GPU holds; on
unified memory (GB10, Jetson, a CPU box) what /proc/meminfo offers, free HugePages counted:
before the server started where precmon started it, else now plus the anonymous memory the server
already holds (its mmap'd weights are in MemAvailable already, as reclaimable file pages).
Where the server states the KV tokens it allocated, its own allocation is set against the fit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.core.schema import Fit, VariantResult
from precmon.power.box import gpu_memory, hugepages_free_bytes, meminfo_now, rss_anon_bytes

#: Context lengths the users that fit are counted at, and user counts the context is given for
#: (docs/design.md §10's record; 8K is a chat, 32K a long document or an agent's history).
USERS_AT_TOKENS = (8192, 32768)
FOR_USERS = (1, 4, 16)
GIB = 2**30
WEIGHTS_FROM = "the server's model size (model_info.size_bytes)"


@dataclass(frozen=True)
class Usable:
    """Memory a server may hold here, and where the figure came from."""

    bytes: int
    basis: str


def _gib(n: float) -> str:
    """Bytes as people read them: GiB, or MiB under one GiB."""
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / 2**20:.1f} MiB"


def unified_usable(meminfo: Mapping[str, int], launched: bool, server_pids: Collection[int]) -> Usable | str:
    """From /proc/meminfo: `meminfo` read before the server started (`launched`), or now with the
    server's anonymous memory added back; free HugePages counted. A reason where it cannot say."""
    available = meminfo.get("MemAvailable")
    if not isinstance(available, int) or available <= 0:
        return "n/a: /proc/meminfo has no MemAvailable here"
    huge = hugepages_free_bytes(meminfo)
    parts = [f"MemAvailable {_gib(available)}"]
    total = available
    if launched:
        parts[0] += " before the server started"
    else:
        held = [b for pid in server_pids if (b := rss_anon_bytes(pid)) is not None]
        if held:
            total += sum(held)
            parts.append(f"the server's own memory {_gib(sum(held))} (RssAnon; a GPU driver's share is not in it)")
        else:
            parts[0] += " with the server loaded (its own memory not found here: understated)"
    if huge:
        total += huge
        parts.append(f"free HugePages {_gib(huge)}")
    return Usable(total, "/proc/meminfo: " + " + ".join(parts))


def usable_memory(
    result: VariantResult, before: Mapping[str, int] | None, server_pids: Collection[int], nvml: Any = None
) -> Usable | str:
    """The variant's usable memory: the GPU's where the model ran on a GPU NVML gives memory for,
    else the host's (`unified_usable`; `before`: /proc/meminfo before precmon started the server)."""
    backend = (result.compute_path or {}).get("backend")
    gpus = gpu_memory(nvml) if backend != "CPU" else []
    if gpus:
        names = sorted({name for name, _ in gpus})
        guess = "" if backend else " (the backend is not known: the model is taken to be on the GPU)"
        return Usable(sum(b for _, b in gpus), f"NVML: memory of {len(gpus)} GPU ({', '.join(names)}){guess}")
    meminfo = before if before is not None else meminfo_now()
    return unified_usable(meminfo, before is not None, server_pids)


def weights_bytes(result: VariantResult) -> tuple[int, str] | str:
    """The weights' bytes as the server reports its model, or why there are none."""
    size = (result.model_info or {}).get("size_bytes")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size, WEIGHTS_FROM
    return "n/a: the server does not report its model's size"


def _positive_int(x: Any) -> int | None:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


def fit_record(usable: Usable | str, weights: tuple[int, str] | str, kv_per_token: Any, capacity: Any) -> Fit:
    """The `fit` record from its inputs; null figures with `reason` where one is missing."""
    kv = _positive_int(kv_per_token)
    fit = Fit(
        usable_bytes=usable.bytes if isinstance(usable, Usable) else None,
        basis=usable.basis if isinstance(usable, Usable) else None,
        weights_bytes=weights[0] if isinstance(weights, tuple) else None,
        weights_from=weights[1] if isinstance(weights, tuple) else None,
        kv_bytes_per_token=kv,
        users_at={str(c): None for c in USERS_AT_TOKENS},
        context_for_users={str(u): None for u in FOR_USERS},
        server_capacity_tokens=_positive_int(capacity),
    )
    missing = [x for x in (usable, weights) if isinstance(x, str)]
    if kv is None:
        missing.append("n/a: no KV bytes per token (a launched llama-server logs its KV cache; vLLM at startup)")
    if missing or fit.usable_bytes is None or fit.weights_bytes is None or kv is None:
        fit.reason = "n/a: " + "; ".join(m.removeprefix("n/a: ") for m in missing)
        return fit
    free = max(fit.usable_bytes - fit.weights_bytes, 0)
    fit.users_at = {str(c): free // (c * kv) for c in USERS_AT_TOKENS}
    fit.context_for_users = {str(u): free // (u * kv) for u in FOR_USERS}
    fit.check = _check(fit, free, kv)
    return fit


def _check(fit: Fit, free: int, kv: int) -> str | None:
    """The server's own KV allocation against the room the fit found for KV."""
    cap = fit.server_capacity_tokens
    if cap is None:
        return None
    held = cap * kv
    if held <= free:
        return f"ok: the server's own cache of {cap} tokens ({_gib(held)}) fits beside the weights"
    return (
        f"the server holds {cap} tokens of KV ({_gib(held)}), more than the {_gib(free)} left beside the weights: "
        "the usable memory is understated here"
    )


def memory_fit(
    result: VariantResult, before: Mapping[str, int] | None, server_pids: Collection[int], nvml: Any = None
) -> Fit:
    """The variant's `fit` (docs/design.md §4 "Memory fit")."""
    m = result.metrics
    usable = usable_memory(result, before, server_pids, nvml)
    return fit_record(usable, weights_bytes(result), m.get(KEY.kv_bytes_per_token), m.get(KEY.kv_capacity_tokens))


def fit_metrics(fit: Fit) -> dict[str, dict[str, int]]:
    """The fit's figures as the registry's sized metrics (`fit_users_at`, `fit_context_for_users`:
    the table's rows, the CSV's, the exporter's), as kv_memory's are; none where they are n/a."""
    out = {}
    for key, figures in ((KEY.fit_users_at, fit.users_at), (KEY.fit_context_for_users, fit.context_for_users)):
        known = {k: v for k, v in figures.items() if isinstance(v, int)}
        if known:
            out[key] = known
    return out
