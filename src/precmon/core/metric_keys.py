"""Every metric key as a name the type checker knows: `KEY.decode_tok_s`, never "decode_tok_s".

The registry (core/registry.py) is where a metric is defined; code outside the core that reads or
writes a metric's value names it through `KEY`, so a typo is a mypy error instead of a silent
`None`, and `tests/core/test_metric_keys_owned.py` finds any module that spells a key as a string.
`tests/core/test_metric_keys_owned.py` also holds this list equal to the registry's keys, then
the `metrics` keys that are no metric's own key (`Metric.metrics_key`: `KEY.concurrency`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricKeys:
    decode_tok_s: str = "decode_tok_s"
    itl_ms_p50: str = "itl_ms_p50"
    itl_ms_p99: str = "itl_ms_p99"
    prefill_ms_per_token: str = "prefill_ms_per_token"
    ttft_s: str = "ttft_s"
    power_idle_w: str = "power_idle_w"
    power_decode_w: str = "power_decode_w"
    power_prefill_w: str = "power_prefill_w"
    energy_decode_j_per_token: str = "energy_decode_j_per_token"
    memory_gb: str = "memory_gb"
    weights_bits_per_weight: str = "weights_bits_per_weight"
    kv_bytes_per_token: str = "kv_bytes_per_token"
    kv_capacity_tokens: str = "kv_capacity_tokens"
    kv_longest_context_tokens: str = "kv_longest_context_tokens"
    kv_max_concurrency_at_ctx: str = "kv_max_concurrency_at_ctx"
    fit_users_at: str = "fit_users_at"
    fit_context_for_users: str = "fit_context_for_users"
    server_decode_tok_s: str = "server_decode_tok_s"
    server_itl_ms_mean: str = "server_itl_ms_mean"
    server_prefill_ms_per_token: str = "server_prefill_ms_per_token"
    server_ttft_s: str = "server_ttft_s"
    long_context_decode_tok_s: str = "long_context_decode_tok_s"
    decode_tok_s_at_depth: str = "decode_tok_s_at_depth"
    prefill_ms_per_token_at_depth: str = "prefill_ms_per_token_at_depth"
    depth_fill_ms: str = "depth_fill_ms"
    concurrency_total_tok_s: str = "concurrency_total_tok_s"
    concurrency_per_user_tok_s: str = "concurrency_per_user_tok_s"
    concurrency_ttft_p50_s: str = "concurrency_ttft_p50_s"
    concurrency_ttft_p99_s: str = "concurrency_ttft_p99_s"
    concurrency_energy_j_per_token: str = "concurrency_energy_j_per_token"
    quality_kld_mean: str = "quality_kld_mean"
    quality_kld_p99: str = "quality_kld_p99"
    quality_top1_agree: str = "quality_top1_agree"
    quality_ppl: str = "quality_ppl"
    # The trusted format: llama-perplexity --kl-divergence's figures, ± as half 95%.
    quality_kld_mean_err95: str = "quality_kld_mean_err95"
    quality_kld_max: str = "quality_kld_max"
    quality_top1_agree_err95: str = "quality_top1_agree_err95"
    quality_ppl_ratio: str = "quality_ppl_ratio"
    quality_ppl_ratio_err95: str = "quality_ppl_ratio_err95"
    quality_rms_dp: str = "quality_rms_dp"
    quality_rms_dp_err95: str = "quality_rms_dp_err95"
    # Keys of a variant's `metrics` that are no metric's own key: the object of a nested metric.
    concurrency: str = "concurrency"


KEY = MetricKeys()
