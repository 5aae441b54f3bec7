"""Every metric the exporter can emit: name, type, help and labels, in one place.

Names follow Prometheus conventions: the `precmon_` prefix, base units in the suffix (watts,
joules, seconds, hertz, celsius, a 0-1 ratio), counters ending `_total`. The collectors build
their families only through `family()`, so the catalog is the list of what can be exported and
the tests and the Grafana dashboard check against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

POWER_LABELS = ("source", "scope", "host")
GPU_LABELS = ("source", "host")
SERVER_LABELS = ("url", "kind", "model", "host")
RESULT_LABELS = ("label", "precision", "model", "kv_cache_dtype", "host")


@dataclass(frozen=True)
class Spec:
    name: str  # as it appears in the exposition (a counter's with `_total`)
    kind: str  # "gauge" | "counter"
    help: str
    labels: tuple[str, ...]


SPECS: tuple[Spec, ...] = (
    Spec("precmon_power_watts", "gauge", "Latest power reading of one power channel", POWER_LABELS),
    Spec(
        "precmon_energy_joules_total",
        "counter",
        "Energy of one power channel: the hardware's counter (method=counter), else the integral of "
        "this exporter's samples since it started (method=integrated)",
        (*POWER_LABELS, "method"),
    ),
    Spec(
        "precmon_node_info",
        "gauge",
        "This node: its name (host, precmon exporter --node) and precmon's version",
        ("host", "version"),
    ),
    Spec("precmon_gpu_clock_hertz", "gauge", "GPU clock (clock=sm|memory)", (*GPU_LABELS, "clock")),
    Spec("precmon_gpu_utilization_ratio", "gauge", "GPU busy share over the driver's last window (0-1)", GPU_LABELS),
    Spec("precmon_gpu_temperature_celsius", "gauge", "GPU temperature", GPU_LABELS),
    Spec("precmon_gpu_power_limit_watts", "gauge", "Enforced GPU power limit", GPU_LABELS),
    Spec("precmon_cpu_utilization_ratio", "gauge", "Host CPU busy share since the last read (0-1)", GPU_LABELS),
    Spec("precmon_server_up", "gauge", "1 when the watched server answered its last health check", SERVER_LABELS),
    Spec(
        "precmon_server_generation_tokens_per_second",
        "gauge",
        "Generated tokens per second over the last poll, all clients (the kind's live counter)",
        SERVER_LABELS,
    ),
    Spec("precmon_server_requests_running", "gauge", "Requests the server is running now", SERVER_LABELS),
    Spec(
        "precmon_result_decode_tokens_per_second",
        "gauge",
        "Decode tok/s of a measured variant (median of its runs), newest results file",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_ttft_seconds",
        "gauge",
        "Time to first token of a measured variant per prompt size",
        (*RESULT_LABELS, "prompt_tokens"),
    ),
    Spec(
        "precmon_result_energy_per_token_joules",
        "gauge",
        "Decode energy per generated token of a measured variant",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_power_watts",
        "gauge",
        "Average power of a measured variant per phase (idle, decode, prefill)",
        (*RESULT_LABELS, "phase"),
    ),
    Spec(
        "precmon_result_node_power_watts",
        "gauge",
        "Average power of one node of a variant measured over several machines, per phase",
        (*RESULT_LABELS, "node", "phase"),
    ),
    Spec(
        "precmon_result_node_energy_per_token_joules",
        "gauge",
        "Decode energy per generated token drawn by one node of a variant measured over several machines",
        (*RESULT_LABELS, "node"),
    ),
    Spec(
        "precmon_result_fit_users",
        "gauge",
        "Users (sequences) of a context length that fit in the box's memory at a variant's precision",
        (*RESULT_LABELS, "context_tokens"),
    ),
    Spec(
        "precmon_result_fit_context_tokens",
        "gauge",
        "Longest context each of so many users can have in the box's memory at a variant's precision",
        (*RESULT_LABELS, "users"),
    ),
    Spec(
        "precmon_result_fit_usable_bytes",
        "gauge",
        "Memory a server may hold on the box the variant was measured on (its memory fit's basis)",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_kld_nats",
        "gauge",
        "Mean KL divergence of a variant's next-token distribution vs the baseline's",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_top1_agreement_ratio",
        "gauge",
        "Share of positions whose most probable token agrees with the baseline (0-1)",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_kld_err95_nats",
        "gauge",
        "Half the 95% interval of the mean KL divergence over the positions",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_kld_p99_nats",
        "gauge",
        "99th percentile of the per-position KL divergence vs the baseline",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_kld_max_nats",
        "gauge",
        "Largest per-position KL divergence vs the baseline",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_top1_agreement_err95_ratio",
        "gauge",
        "Half the 95% interval of the top-1 agreement (0-1)",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_ppl_ratio",
        "gauge",
        "Perplexity of the variant on the evaluation text divided by the baseline's",
        RESULT_LABELS,
    ),
    Spec(
        "precmon_result_quality_rms_dp_ratio",
        "gauge",
        "RMS change of the text's own token probability vs the baseline (0-1)",
        RESULT_LABELS,
    ),
)

BY_NAME = {s.name: s for s in SPECS}


def family(name: str) -> GaugeMetricFamily | CounterMetricFamily:
    """An empty family of a catalogued metric, ready for `add_metric(label_values, value)`."""
    s = BY_NAME[name]
    if s.kind == "counter":
        return CounterMetricFamily(s.name, s.help, labels=s.labels)  # it strips and re-adds `_total`
    return GaugeMetricFamily(s.name, s.help, labels=s.labels)
