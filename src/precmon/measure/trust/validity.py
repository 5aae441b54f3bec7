"""Was the measurement disturbed? The checks behind a variant's `warnings` (docs/design.md §4).

Each check is a pure function from figures to (figures, warnings): the figures go to the
variant's `validity`, the warnings (one line each, starting with a code) to its `warnings`. A
flagged variant keeps its status: the numbers are what was measured, the warning says why they
may not be the machine's or the precision's. The I/O that gathers the figures (CPU times, NVML)
is `measure/trust/probe.py`; the thresholds are here, each with the reason it has its value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from precmon.core import phases
from precmon.core.cells import RowKey
from precmon.core.metric_keys import KEY
from precmon.core.schema import Run
from precmon.core.stats import median
from precmon.core.warning_codes import FALLBACK_CODE, NODE_MISSING
from precmon.measure.checks import positive_finite
from precmon.measure.concurrency.check import CODE as QUEUED_CODE
from precmon.measure.depth.steps import CODES as DEPTH_CODES
from precmon.measure.labels.build_facts import GPU_UNUSED_CODE
from precmon.measure.quality.run import FEW_POSITIONS_CODE
from precmon.measure.trust import server_truth
from precmon.measure.trust.preflight import CODES as PREFLIGHT_CODES
from precmon.measure.trust.spark import CODES as SPARK_CODES
from precmon.power.gpu import GpuFact, slowdown_reasons

# noisy: cv above which a headline metric is flagged. On a quiet machine precmon's decode runs
# agree within 1-3% (they match llama-server's own timings); the precision differences users look
# for are 5-30%, so a spread of 10% run to run is as large as the effect being measured, and a
# loaded 2-core box (a quarter of the quiet rate) is far beyond it.
NOISY_CV = 0.10
NOISY_CODE = "noisy:"
#: Chunk-gap percentiles vary by nature (one chunk may hold several tokens, p99 is a tail of
#: ~256 gaps): their spread is not a disturbance, so they are not flagged.
NOISY_EXEMPT = (KEY.itl_ms_p50, KEY.itl_ms_p99)
#: Their `metrics_stats` keys (scalar metrics: one row key each, no size).
_EXEMPT_STATS_KEYS = frozenset(RowKey(k).stats_key for k in NOISY_EXEMPT)

#: Every warning code a variant's `warnings` can start with (design §8): the host and server checks
#: here (`noisy:` too), and those the concurrency, depth, Spark and label steps raise; a test holds
#: it to their constants.
CODES = (
    "host-busy:",
    "client-server-gap:",
    "gpu-throttle:",
    "gpu-shared:",
    "low-power:",
    NOISY_CODE,
    QUEUED_CODE,
    *DEPTH_CODES,
    *SPARK_CODES,
    FALLBACK_CODE,
    GPU_UNUSED_CODE,
    NODE_MISSING,
    FEW_POSITIONS_CODE,
    *PREFLIGHT_CODES,
)

# host-busy: other processes' average CPU over the measured window. An idle host reads ~0.01
# cores, even with 16 of them; one busy loop is 1.0; a quarter of a core is
# far from both. Absolute cores, not a share of all cores: the server's threads compete with
# any runnable process, however many idle cores a larger machine has left.
OTHER_CORES_MAX = 0.25
# CPU steal (a hypervisor running other guests): a tenth of a core lost is already visible in
# token gaps of a CPU-bound server; quiet VMs read 0.00.
STEAL_CORES_MAX = 0.1

# client-server-gap, decode: median |client ÷ server − 1| over the decode runs. Both clocks time
# the same tokens, so on a quiet loopback they agree within a few percent (the client counts
# first → last text chunk, the server all predicted tokens); bursts (a proxy, a starved
# client, server-side batching of the stream) move the client's figure by 10× or more.
DECODE_GAP_MAX = 0.20
# ...and per run: a run whose client rate is at least twice the server's reached precmon in a
# burst (no quiet loopback reads that: 0.0-2% there). One such run among three leaves the median
# right but makes the spread and the CI the client's, not the engine's (seen on vLLM CPU: one of
# three fp8-KV decode runs read 55,413 tok/s against vLLM's 293, the median gap +0.5%).
DECODE_BURST_GAP = 1.0
# client-server-gap, TTFT: one-sided, because the client's TTFT includes what the server's
# figure does not. Against llama.cpp's `prompt_ms` (prompt processing only: no HTTP,
# tokenization or queueing; run.extra.ttft_overhead_ms) a run is flagged when the client waited
# both more than TTFT_EXCESS_MS beyond it and more than TTFT_EXCESS_RATIO times it: a quiet
# loopback adds 1-10 ms.
TTFT_EXCESS_MS = 50.0
TTFT_EXCESS_RATIO = 1.0
# Against the server's own TTFT (`ttft_ms`: vLLM's time_to_first_token histogram delta, request
# arrival → first token in its output processor; LM Studio's stats) only the HTTP request in,
# the prompt's tokenization (vLLM stamps arrival after it) and the first chunk out are outside
# it, so the ratio allowed is half as large: on the 2-core vLLM CPU test bed the client waited
# 3-17 ms beyond it (10 quiet runs, 12-144 ms TTFT), 12-30 ms with two CPU burners, and
# 260-440 ms when the stream reached it in a burst.
TTFT_SAME_BASIS_RATIO = 0.5

# gpu-throttle: a slowdown reason set in at least this share of the GPU's samples during runs
# (extras are read at 2 Hz; one sample of a transient power-cap event is not a disturbance).
THROTTLE_SHARE_MIN = 0.10
# low-power: DGX Spark (GB10) stuck in its low USB-PD power state draws ~30 W with low clocks
# (normal decode draws more and clocks near the maximum); both must hold, because a tiny
# model's decode can draw little at full clocks. A guess, never seen on a Spark: where the spbm
# driver is present its PL limits and PROCHOT say it instead (measure/trust/spark.py).
LOW_POWER_NAMES = ("GB10",)
LOW_POWER_W = 35.0
LOW_POWER_CLOCK_RATIO = 0.5


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


def noisy_warnings(stats: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One `noisy:` line per headline metric of `metrics_stats` whose cv exceeds `NOISY_CV`
    (docs/design.md §8)."""
    out = []
    for key, st in stats.items():
        cv = positive_finite(st.get("cv"))
        if key in _EXEMPT_STATS_KEYS or cv is None or cv <= NOISY_CV:
            continue
        out.append(
            f"{NOISY_CODE} {key} varies {cv * 100:.0f}% run to run (cv over {st.get('n')} runs; "
            f"threshold {NOISY_CV * 100:.0f}%)"
        )
    return out


def host_busy(usage: dict[str, Any]) -> list[str]:
    """Warnings from `power.cpu.cpu_usage` figures (other processes' cores, steal)."""
    out = []
    other, steal = usage.get("other_cores"), usage.get("steal_cores")
    if isinstance(other, (int, float)) and other > OTHER_CORES_MAX:
        who = "besides the server and precmon" if usage.get("server_cores") is not None else "besides precmon"
        out.append(
            f"host-busy: other processes used {other:.2f} cores on average during the runs {who} "
            f"(threshold {OTHER_CORES_MAX}): the numbers may be low"
        )
    if isinstance(steal, (int, float)) and steal > STEAL_CORES_MAX:
        out.append(
            f"host-busy: the hypervisor took {steal:.2f} cores (CPU steal) during the runs "
            f"(threshold {STEAL_CORES_MAX}): the numbers may be low"
        )
    return out


def run_gaps(run: Run) -> dict[str, float]:
    """One run's client-vs-server figures: `decode_gap` (client ÷ server − 1), `ttft_excess_ms`
    over the server's own TTFT (`server_ttft_ms`) where it reports one, else over its prompt
    time (`server_prompt_ms`)."""
    out: dict[str, float] = {}
    server_rate = positive_finite(run.server_timings.get("predicted_per_second"))
    if run.phase in (phases.DECODE, phases.DEPTH_DECODE) and run.decode_tok_s is not None and server_rate:
        out["decode_gap"] = round(run.decode_tok_s / server_rate - 1.0, 4)
    if run.ttft_s is None:
        return out
    for key, figure in (("ttft_ms", "server_ttft_ms"), ("prompt_ms", "server_prompt_ms")):
        server_ms = positive_finite(run.server_timings.get(key))
        if server_ms is not None:
            out["ttft_excess_ms"] = round(run.ttft_s * 1000.0 - server_ms, 3)
            out[figure] = round(server_ms, 3)
            break
    return out


def client_server_gap(runs: Iterable[Run]) -> tuple[dict[str, Any], list[str]]:
    """Client vs the server's own timing over a variant's valid measured runs: figures, warnings.

    Decode: the median gap of the decode runs. TTFT: the median excess per phase (decode,
    prefill, ttft), the worst phase decides: a stream held until its end delays the first chunk
    of a 128-token decode by the whole decode, that of a 1-token prefill hardly at all.
    """
    runs = list(runs)
    gaps = [(r.phase, g) for r in runs if r.ok and phases.measured(r.phase) and (g := run_gaps(r))]
    dec = [g["decode_gap"] for _, g in gaps if "decode_gap" in g]
    by_phase: dict[str, list[dict[str, float]]] = {}
    for phase, g in gaps:
        if "ttft_excess_ms" in g:
            by_phase.setdefault(phase, []).append(g)
    if not dec and not by_phase:
        why = next((w for r in runs if (w := server_truth.why_none(r))), None)
        return {"reason": "n/a: the server reported no timings of its own" + (f" ({why})" if why else "")}, []
    figures: dict[str, Any] = {"decode_runs": len(dec), "ttft_runs": sum(len(v) for v in by_phase.values())}
    dec_figures, dec_warnings = _decode_gap(dec) if dec else ({}, [])
    ttft_figures, ttft_warnings = _ttft_gap(by_phase)
    return figures | dec_figures | ttft_figures, dec_warnings + ttft_warnings


def _decode_gap(dec: list[float]) -> tuple[dict[str, Any], list[str]]:
    """The decode runs' median client-vs-server gap and the runs that came in a burst: figures,
    warnings (a median beyond ±DECODE_GAP_MAX, else bursts that make the spread the client's)."""
    gap = median(dec)
    assert gap is not None
    figures: dict[str, Any] = {"decode_gap_median": _r(gap, 4), "decode_gap_max": DECODE_GAP_MAX}
    warnings = []
    if abs(gap) > DECODE_GAP_MAX:
        why = (
            "chunks reached precmon in bursts, so the server's figure stands"
            if gap > 0
            else "time was lost between the server and precmon (network, proxy, a busy client); "
            "the server's figure is the engine's speed"
        )
        warnings.append(
            f"client-server-gap: client decode differs from the server's own timing by {gap:+.0%} "
            f"(median of {len(dec)} runs, threshold ±{DECODE_GAP_MAX:.0%}): {why}"
        )
    bursts = [g for g in dec if g >= DECODE_BURST_GAP]
    figures |= {"decode_burst_runs": len(bursts), "decode_burst_gap": DECODE_BURST_GAP}
    if bursts and abs(gap) <= DECODE_GAP_MAX:
        warnings.append(
            f"client-server-gap: {len(bursts)} of {len(dec)} decode runs reached precmon in a burst "
            f"(client rate up to {1 + max(bursts):.0f}x the server's own): the median stands, "
            "the spread and its CI are the client's, not the engine's"
        )
    return figures, warnings


def _ttft_gap(by_phase: dict[str, list[dict[str, float]]]) -> tuple[dict[str, Any], list[str]]:
    """Per phase, the median TTFT excess over the server's own TTFT (else its prompt time): the
    figures, and a warning for the worst phase beyond both the absolute and the relative limit."""
    figures: dict[str, Any] = {}
    worst: tuple[float, float, str, int, str] | None = None
    ttft_fig: dict[str, Any] = {}
    for phase, gs in by_phase.items():
        basis = "server_ttft_ms" if any("server_ttft_ms" in g for g in gs) else "server_prompt_ms"
        gs = [g for g in gs if basis in g]
        excess = median([g["ttft_excess_ms"] for g in gs])
        server = median([g[basis] for g in gs])
        assert excess is not None and server is not None
        ratio = TTFT_SAME_BASIS_RATIO if basis == "server_ttft_ms" else TTFT_EXCESS_RATIO
        ttft_fig[phase] = {"ttft_excess_ms_median": _r(excess), f"{basis}_median": _r(server)}
        if basis == "server_ttft_ms":
            ttft_fig[phase]["ttft_excess_ratio_allowed"] = ratio
        if excess > TTFT_EXCESS_MS and excess > ratio * server and (worst is None or excess > worst[0]):
            worst = (excess, server, phase, len(gs), basis)
    if ttft_fig:
        figures["ttft"] = ttft_fig
        figures |= {"ttft_excess_ms_allowed": TTFT_EXCESS_MS, "ttft_excess_ratio_allowed": TTFT_EXCESS_RATIO}
    if worst is None:
        return figures, []
    excess, server, phase, n, basis = worst
    what, ratio, room = (
        ("own TTFT", TTFT_SAME_BASIS_RATIO, "HTTP")
        if basis == "server_ttft_ms"
        else ("prompt time", TTFT_EXCESS_RATIO, "HTTP and queueing")
    )
    warning = (
        f"client-server-gap: client TTFT exceeds the server's {what} ({server:.1f} ms) by "
        f"{excess:.1f} ms (median of {n} {phase} runs; allowed {TTFT_EXCESS_MS:.0f} ms and "
        f"{ratio:.0%} for {room}): the first chunk was held back, "
        "so the server's figure stands"
    )
    return figures, [warning]


def gpu_checks(
    facts: list[GpuFact],
    samples: dict[str, list[tuple[str, float | None, dict[str, float]]]],
    server_pids: list[int] | None,
    own_pid: int,
    spbm: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Per GPU: throttling, other processes and GB10 low power (the guess; `spbm`: the driver is
    present, so `measure/trust/spark.py` answers instead).

    Args:
        facts: `GpuFact`s from the start and the end of the runs (several per GPU).
        samples: channel id → (phase, watts, extras) of every sample taken during a run.
        server_pids: the server's process tree where it was found on this host, else None.
        own_pid: precmon's pid.
    """
    if not facts:
        return {"reason": "n/a: no GPU seen through NVML"}, []
    by_gpu: dict[str, list[GpuFact]] = {}
    for f in facts:
        by_gpu.setdefault(f.channel_id, []).append(f)
    figures: dict[str, Any] = {}
    warnings: list[str] = []
    for cid, fs in by_gpu.items():
        fig, warn = _one_gpu(fs, samples.get(cid, []), server_pids, own_pid, spbm)
        figures[cid] = fig
        warnings += [w.replace(": ", f": {cid} {fs[0].name}: ", 1) for w in warn]
    return figures, warnings


def _one_gpu(
    facts: list[GpuFact],
    samples: list[tuple[str, float | None, dict[str, float]]],
    server_pids: list[int] | None,
    own_pid: int,
    spbm: bool,
) -> tuple[dict[str, Any], list[str]]:
    name = facts[0].name
    max_sm = next((f.max_sm_clock_mhz for f in facts if f.max_sm_clock_mhz), None)
    fig: dict[str, Any] = {"name": name, "max_sm_clock_mhz": max_sm}
    warnings: list[str] = []
    with_reasons = [int(x["clock_event_reasons"]) for _, _, x in samples if "clock_event_reasons" in x]
    clocks = [x["sm_clock_mhz"] for _, _, x in samples if "sm_clock_mhz" in x]
    temps = [x["temp_c"] for _, _, x in samples if "temp_c" in x]
    fig["samples"] = len(samples)
    fig["sm_clock_mhz_median"] = _r(median(clocks), 1)
    fig["sm_clock_ratio"] = _r(fig["sm_clock_mhz_median"] / max_sm) if max_sm and clocks else None
    fig["temp_c_max"] = max(temps) if temps else None
    if with_reasons:
        shares = {
            reason: sum(reason in slowdown_reasons(m) for m in with_reasons) / len(with_reasons)
            for reason in dict.fromkeys(r for m in with_reasons for r in slowdown_reasons(m))
        }
        fig["slowdown_share"] = {k: round(v, 3) for k, v in shares.items()}
        hit = [f"{k} in {v:.0%} of samples" for k, v in shares.items() if v >= THROTTLE_SHARE_MIN]
        if hit:
            clock = f"SM clock {fig['sm_clock_mhz_median']:.0f}" if clocks else "SM clock n/a"
            clock += f" of {max_sm:.0f} MHz" if max_sm and clocks else ""
            temp = f", up to {fig['temp_c_max']:.0f} °C" if temps else ""
            warnings.append(f"gpu-throttle: {', '.join(hit)} during the runs ({clock}{temp})")
    else:
        fig["slowdown_share"] = "n/a: NVML reported no clock-event reasons"
    fig |= _shared(facts, server_pids, own_pid, warnings)
    if any(n in name for n in LOW_POWER_NAMES):
        if spbm:
            fig["low_power"] = "n/a: the spbm driver's limits and PROCHOT answer instead (validity.spark)"
        else:
            fig |= _low_power(samples, max_sm, warnings)
    return fig, warnings


def _shared(facts: list[GpuFact], server_pids: list[int] | None, own_pid: int, warnings: list[str]) -> dict[str, Any]:
    listed = [f.pids for f in facts if f.pids is not None]
    if not listed:
        return {"other_pids": next((f.why_no_pids for f in facts if f.why_no_pids), "n/a")}
    pids = set().union(*listed) - {own_pid}
    known = set(server_pids or ())
    if known & pids:
        others = sorted(pids - known)
        text = ", ".join(f"pid {p}" for p in others)
    else:
        # The server was not found here, or NVML's pids are of another pid namespace (a
        # container): one of the GPU's processes is taken to be the server.
        others = sorted(pids)[1:]
        text = f"{len(pids)} processes where the server is one"
    if others:
        warnings.append(f"gpu-shared: other processes held the GPU during the runs ({text}): its time was shared")
    return {"gpu_pids": sorted(pids), "other_pids": others}


def _low_power(
    samples: list[tuple[str, float | None, dict[str, float]]], max_sm: float | None, warnings: list[str]
) -> dict[str, Any]:
    dec = [(w, x) for phase, w, x in samples if phase in (phases.DECODE, phases.LONG_CONTEXT_DECODE)]
    watts = median([w for w, _ in dec])
    clock = median([x["sm_clock_mhz"] for _, x in dec if "sm_clock_mhz" in x])
    ratio = clock / max_sm if clock is not None and max_sm else None
    fig: dict[str, Any] = {"decode_watts_median": _r(watts, 2), "decode_sm_clock_ratio": _r(ratio)}
    if watts is None or ratio is None:
        fig["low_power"] = "n/a: needs decode watts and SM clock with its maximum"
        return fig
    fig["low_power"] = watts <= LOW_POWER_W and ratio < LOW_POWER_CLOCK_RATIO
    if fig["low_power"]:
        warnings.append(
            f"low-power: decode at {watts:.0f} W with the SM clock at {ratio:.0%} of its maximum "
            f"(thresholds {LOW_POWER_W:.0f} W, {LOW_POWER_CLOCK_RATIO:.0%}): the DGX Spark looks stuck in "
            "its low USB-PD power state; check the power supply and reboot (a guess from NVML: without the "
            "spbm driver precmon cannot read the power limits or PROCHOT)"
        )
    return fig
