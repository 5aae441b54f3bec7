"""`precmon doctor [--json]`: which power sources and servers were found, and why not.

Server entries hold what servers said (kind, model names, reasons) and the URLs given: they are
shown escaped, and a URL's credentials never reach the screen or the JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from precmon.cli.common import ExitCode
from precmon.power.doctor import format_power_table, power_report
from precmon.servers.detect import discover_servers
from precmon.untrusted import markup, redact, redact_url


def _redacted(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    if isinstance(out.get("url"), str):
        out["url"] = redact_url(out["url"])
    if isinstance(out.get("reason"), str):
        out["reason"] = redact(out["reason"])
    return out


def run(args: argparse.Namespace) -> int:
    power = power_report()
    servers = [_redacted(s) for s in discover_servers(args.url or None)]
    if args.json:
        print(json.dumps({"power_sources": power, "servers": servers}, indent=2))
        return ExitCode.OK
    con = Console()
    con.print(format_power_table(power))
    t = Table(title="LLM servers (usual local ports and --url)")
    for col in ("url", "kind", "healthy", "models"):
        t.add_column(col)
    for s in servers:
        listed = s.get("models")
        models: list[Any] = listed if isinstance(listed, list) else []
        t.add_row(
            markup(s.get("url")),
            markup(s.get("kind") or "?"),
            "yes" if s.get("healthy") else "no",
            markup(", ".join(str(m) for m in models) or "-", limit=200),
        )
    if not servers:
        t.add_row("(none found)", "", "", "start one, or pass --url")
    con.print(t)
    return ExitCode.OK
