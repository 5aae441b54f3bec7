"""`precmon doctor [--json]`: which power sources and servers were found, and why not."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table


def _servers(urls: list[str]) -> list[dict]:
    try:
        from precmon.servers.detect import discover_servers
    except ImportError:
        return []
    return discover_servers(urls or None)


def run(args: argparse.Namespace) -> int:
    from precmon.power.doctor import format_power_table, power_report

    power = power_report()
    servers = _servers(args.url)
    if args.json:
        print(json.dumps({"power_sources": power, "servers": servers}, indent=2))
        return 0
    con = Console()
    con.print(format_power_table(power))
    t = Table(title="LLM servers (usual local ports and --url)")
    for col in ("url", "kind", "healthy", "models"):
        t.add_column(col)
    for s in servers:
        t.add_row(
            s["url"], s.get("kind") or "?", "yes" if s.get("healthy") else "no", ", ".join(s.get("models") or []) or "-"
        )
    if not servers:
        t.add_row("(none found)", "", "", "start one, or pass --url")
    con.print(t)
    return 0
