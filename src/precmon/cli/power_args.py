"""The power flags: `--power-from` (another node's power added to every window) and `precmon exporter`'s."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from precmon.cli import argtypes
from precmon.cli.argtypes import url_arg
from precmon.cli.help_text import EXPORTER_DESCRIPTION
from precmon.servers.kinds import KIND_NAMES


def add_power_from(p: Any, inherit: bool = False) -> None:
    """`--power-from URL`, repeatable (`inherit`: as in parser.add_server_args)."""
    p.add_argument(
        "--power-from",
        metavar="URL",
        type=url_arg,
        action="append",
        default=argparse.SUPPRESS if inherit else None,
        help="another node's exporter, whose power every window adds (repeatable): `precmon exporter` "
        "(http://HOST:9464) or NVIDIA's DCGM exporter (http://HOST:9400/metrics); read at each window's edges",
    )


def add_exporter_parser(sub: Any, handler: Callable[[argparse.Namespace], Any]) -> None:
    """`exporter`: this node's power, servers and results for Prometheus."""
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
    e.add_argument("--server", default="auto", choices=["auto", *KIND_NAMES], help="server kind of every --url (auto)")
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
        "--node",
        metavar="NAME",
        default=None,
        help="this node's name in every series (the `host` label) and to another machine's --power-from "
        "(default: the hostname)",
    )
    e.add_argument(
        "--interval-s",
        type=argtypes.exporter_interval,
        default=2.0,
        metavar="S",
        help="how often power is read, servers are polled and --textfile is rewritten (default: %(default)s)",
    )
    e.set_defaults(handler=handler)
