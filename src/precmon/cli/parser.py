"""The argparse tree of docs/design.md §3. Each subcommand's handler is imported lazily, so
`precmon --help` stays fast and a headless command never loads textual."""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NoReturn

from precmon import __version__
from precmon.cli import argtypes
from precmon.cli.argtypes import url_arg
from precmon.cli.help_text import DEMO_DESCRIPTION, EPILOG_EXAMPLES, LADDER_DESCRIPTION, STRICT_HELP
from precmon.cli.power_args import add_exporter_parser, add_power_from
from precmon.core import registry
from precmon.core import settings as plan_settings
from precmon.core.settings import MAX_SECONDS  # the one bound on seconds, flags and sweep files alike
from precmon.refresh import DEFAULT_REFRESH_S
from precmon.report import formats
from precmon.servers.kinds import DEMO_ENGINES, KIND_NAMES, USUAL_PORTS

__all__ = ["MAX_SECONDS", "add_bench_args", "add_refresh_arg", "add_report_args", "add_server_args", "build_parser"]
__all__ += ["url_arg"]


def epilog() -> str:
    """Metric definitions (from `precmon.core.registry`) and examples, under `--help`."""
    lines = ["metrics (docs/design.md §4):", *registry.help_lines(), ""]
    return "\n".join(lines) + "\n" + EPILOG_EXAMPLES


def _lazy(module: str, func: str):
    def handler(args: argparse.Namespace) -> Any:
        return getattr(importlib.import_module(module), func)(args)

    return handler


def add_refresh_arg(p: argparse.ArgumentParser, inherit: bool = False) -> None:
    """`--refresh-s` of the TUI (`inherit`: as in `add_server_args`)."""
    p.add_argument(
        "--refresh-s",
        type=argtypes.refresh_seconds,
        default=argparse.SUPPRESS if inherit else DEFAULT_REFRESH_S,
        metavar="S",
        help="how often the live panels repaint and power is read while nothing is measured "
        f"(default {DEFAULT_REFRESH_S:g}; nvitop's is 2); a bench or sweep always samples power at the full rate",
    )


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


def _add_setting(g: Any, row: plan_settings.Setting, default: Any = None) -> None:
    """One flag from its row of the settings table. Its default is None (not the row's): the
    plan starts from the defaults or `--quick`'s values and only flags given replace them
    (`default`: argparse.SUPPRESS for a flag the top level also takes, as in `add_server_args`)."""
    help_text = row.help_text().replace("%", "%%")
    if row.kind == plan_settings.FLAG:
        g.add_argument(row.option, action="store_true", help=help_text)
    elif row.kind in (plan_settings.CHOICE, plan_settings.TEXT):
        g.add_argument(row.option, choices=row.choices or None, metavar=row.metavar, default=default, help=help_text)
    else:
        kw = {"type": argtypes.setting_type(row), "metavar": row.metavar, "default": default}
        g.add_argument(row.option, help=help_text, **kw)


def add_report_args(p: argparse.ArgumentParser, inherit: bool = False) -> None:
    """How the results are judged (`precmon.core.settings.REPORT`: `--max-kld`): a flag of the
    TUI and of every command that measures or reports; kept in the results' `settings`.
    `inherit`: a subcommand, so `precmon --max-kld 0.1 sweep F` keeps the top level's value."""
    g = p.add_argument_group("judging the results (kept in the results file's settings; report's flag overrides them)")
    for row in plan_settings.REPORT:
        _add_setting(g, row, argparse.SUPPRESS if inherit else None)


def add_bench_args(p: argparse.ArgumentParser) -> None:
    """The plan and quality options of `bench`: one flag per row of `precmon.core.settings`."""
    g = p.add_argument_group("measurement plan")
    for row in plan_settings.PLAN:
        _add_setting(g, row)
    g.add_argument("--quick", action="store_true", help=plan_settings.quick_help())
    g.add_argument("--no-power", action="store_true", help="do not sample this machine's power")
    add_power_from(g)
    q = p.add_argument_group(
        "quality (docs/design.md §4: KL divergence vs a baseline, teacher-forced; any of these turns it on)"
    )
    for row in plan_settings.QUALITY:
        _add_setting(q, row)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (docs/design.md §3: a usage error is one line on stderr
    naming the flag, exit 2): `precmon bench: error: argument --repeats: expected a positive
    integer, got 0 (see precmon bench --help)`, without the usage block above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
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
    add_power_from(p)
    add_report_args(p)
    sub = p.add_subparsers(title="commands", metavar="COMMAND")
    for add in (
        _add_watch,
        _add_bench,
        _add_sweep,
        _add_report,
        _add_compare,
        _add_doctor,
        lambda sub: add_exporter_parser(sub, _lazy("precmon.cli.commands.exporter_cmd", "run")),
        _add_demo,
        _add_ladder,
    ):
        add(sub)
    return p


def _add_watch(sub: Any) -> None:
    """`watch`: the passive TUI for demos (the server flags inherited from the top level)."""
    w = sub.add_parser("watch", help="passive TUI for demos: big live readouts, no load unless --drive")
    add_server_args(w, inherit=True)
    w.add_argument("--drive", action="store_true", help="keep a steady load so a demo always shows live numbers")
    add_refresh_arg(w, inherit=True)
    add_power_from(w, inherit=True)
    w.add_argument(
        "--prometheus",
        metavar="HOST:PORT",
        default=None,
        help="also serve `precmon exporter`'s /metrics here while watching, from the TUI's own power "
        "sampler (e.g. 127.0.0.1:9464; no auth: a non-loopback address warns)",
    )
    w.set_defaults(handler=_lazy("precmon.cli.commands.tui_cmd", "run_watch"))


def _add_bench(sub: Any) -> None:
    """`bench`: one variant measured headless; the plan options come from the settings table."""
    b = sub.add_parser(
        "bench",
        help="headless measurement of one variant; prints the table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog(),
    )
    add_server_args(b, url_required=True)
    b.add_argument("--label", default=None, help="name of this variant in tables (default: model/quantization)")
    b.add_argument("--precision", default=None, help="precision tag, e.g. fp16, fp8, int8, int4, nvfp4")
    b.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="results folder: results.json and the journal of every run (default ~/.cache/precmon/bench/<time>)",
    )
    b.add_argument(
        "--json", metavar="FILE", default=None, help="also write the results (schema precmon.results/1) here"
    )
    b.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_bench_args(b)
    add_report_args(b, inherit=True)
    b.set_defaults(handler=_lazy("precmon.cli.commands.bench_cmd", "run"))


def _add_sweep(sub: Any) -> None:
    """`sweep`: a sweep file run in the TUI or headless."""
    s = sub.add_parser("sweep", help="run a precision sweep from a TOML file")
    s.add_argument("spec", metavar="SPEC.toml")
    s.add_argument(
        "--headless", action="store_true", help="no TUI: progress, then the table and the pick line on the terminal"
    )
    s.add_argument("--out", metavar="DIR", default=None, help="results folder (default ./precmon-results/<time>)")
    s.add_argument("--resume", action="store_true", help="skip variants already measured in --out (with the same plan)")
    s.add_argument(
        "--replan",
        action="store_true",
        help="with --resume: measure again the variants a changed plan touches, instead of refusing the change",
    )
    s.add_argument("--json", metavar="FILE", default=None, help="also write the results JSON here")
    s.add_argument("--check", action="store_true", help="only validate the sweep file")
    s.add_argument(
        "--quick",
        action="store_true",
        help="start from --quick's plan (small sizes for a fast look); the sweep file's own plan keys still win",
    )
    add_power_from(s)
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    add_report_args(s, inherit=True)
    s.set_defaults(handler=_lazy("precmon.cli.commands.sweep_cmd", "run"))


def _add_report(sub: Any) -> None:
    """`report`: one results file rendered in a format."""
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
        type=argtypes.hours_per_day,
        default=None,
        help="hours of use per day for a second monthly-kWh column (24 h/day is always shown)",
    )
    r.add_argument("--price-per-kwh", type=argtypes.price, default=None, help="energy price for monthly cost")
    r.add_argument(
        "--bandwidth-gbs", type=argtypes.positive("GB/s"), default=None, help="memory bandwidth for roofline context"
    )
    add_report_args(r, inherit=True)  # overrides the file's settings.max_kld
    r.set_defaults(handler=_lazy("precmon.cli.commands.report_cmd", "run_report"))


def _add_compare(sub: Any) -> None:
    """`compare`: results files side by side."""
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
    c.set_defaults(handler=_lazy("precmon.cli.commands.report_cmd", "run_compare"))


def _add_doctor(sub: Any) -> None:
    """`doctor`: which power sources and servers were found."""
    d = sub.add_parser("doctor", help="which power sources and servers were found, and why not")
    d.add_argument("--json", action="store_true", help="one JSON object: power_sources, servers")
    d.add_argument("--url", type=url_arg, action="append", default=[], help="also probe this server URL (repeatable)")
    d.set_defaults(handler=_lazy("precmon.cli.commands.doctor_cmd", "run"))


#: `--cpu` of demo and ladder (testbed/build_choice.py).
CPU_HELP = (
    "build and serve llama.cpp for the CPU even where NVML sees an NVIDIA GPU and a CUDA compiler is found "
    "(default: CUDA for that GPU's architecture, every layer on it)"
)


def _add_demo(sub: Any) -> None:
    """`demo`: a real local server on a real model's precision ladder."""
    m = sub.add_parser(
        "demo",
        help="a real local llama.cpp server sweeping a real model's F16/Q8_0/Q4_0/NVFP4/MXFP4 "
        "in the TUI (builds llama-server and fetches the model on first use; --engine vllm for vLLM)",
        description=DEMO_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument(
        "--engine",
        choices=DEMO_ENGINES,
        default=DEMO_ENGINES[0],
        help="the server the demo runs (default: %(default)s; the costs of each are above)",
    )
    m.add_argument("--headless", action="store_true", help="run the demo sweep without the TUI")
    m.add_argument("--cpu", action="store_true", help=CPU_HELP)
    m.add_argument(
        "--port", type=argtypes.port, default=0, help="port for the llama.cpp demo server (default: a free one)"
    )
    m.add_argument(
        "--eager",
        action="store_true",
        help="--engine vllm: start each server with --enforce-eager (ready in ~35 s instead of ~1 min; "
        "no torch.compile, so decode is slower than a production server's)",
    )
    m.add_argument("--out", metavar="DIR", default=None)
    add_report_args(m, inherit=True)
    m.set_defaults(handler=_lazy("precmon.cli.commands.demo_cmd", "run"))


def _add_ladder(sub: Any) -> None:
    """`ladder`: quantize one wide GGUF into the ladder and write its sweep file."""
    from precmon.sweep.ladder import DEFAULT_RUNGS, RUNGS

    m = sub.add_parser(
        "ladder",
        help="quantize an F16/BF16 GGUF into Q8_0/Q4_K_M/NVFP4/MXFP4 and write the sweep file that measures them",
        description=LADDER_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument("model", metavar="MODEL.gguf", help="the F16 or BF16 GGUF (the baseline)")
    m.add_argument(
        "--out", metavar="DIR", default=None, help="where the rungs and ladder.toml go (default: beside MODEL)"
    )
    m.add_argument(
        "--rungs",
        default=",".join(DEFAULT_RUNGS),
        help=f"comma-separated rungs (default: %(default)s; known: {', '.join(RUNGS)})",
    )
    m.add_argument(
        "--quantize",
        metavar="PATH",
        default=None,
        help="llama-quantize (default: precmon's own build for this machine, made on first use; PATH's only if named)",
    )
    m.add_argument(
        "--server", metavar="PATH", default=None, help="llama-server for the sweep file (default: as --quantize's)"
    )
    m.add_argument(
        "--port", type=argtypes.port, default=18300, help="first port of the launched servers (default: %(default)s)"
    )
    m.add_argument(
        "--server-args",
        default="",
        metavar="ARGS",
        help='more llama-server flags, e.g. "-c 8192" (precmon adds -ngl 99 on a GPU, -lv 4, --slot-save-path)',
    )
    m.add_argument("--cpu", action="store_true", help=CPU_HELP)
    m.set_defaults(handler=_lazy("precmon.cli.commands.ladder_cmd", "run"))
