"""`precmon doctor [--json]`: which power sources and servers were found, and why not.

The power layer gives the entries (power/doctor.py, docs/design.md §3); this module renders them.
Every string shown comes from sysfs, a driver or a server, so it is escaped before rich sees it.
Server entries hold what servers said (kind, model names, reasons) and the URLs given: they are
shown escaped, and a URL's credentials never reach the screen or the JSON.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from precmon import api
from precmon.core.schema import Preflight
from precmon.exit_codes import ExitCode
from precmon.power.doctor import power_report
from precmon.power.spark.report import spbm_report, summary_lines
from precmon.servers.detect import discover_servers
from precmon.untrusted import markup, redact, redact_url


def format_power_table(entries: list[dict[str, Any]]) -> Table:
    """A rich Table of `power_report()` entries: readable channels first, then what is missing."""
    table = Table(title="Power sources", title_justify="left")
    table.add_column("id")
    table.add_column("kind")
    table.add_column("scope")
    table.add_column("watts", justify="right")
    table.add_column("notes")
    for e in entries:
        ident, kind = markup(e["id"]), markup(e["kind"])
        if e["available"]:
            watts = "—" if e["watts"] is None else f"{e['watts']:.1f} W"
            notes = "; ".join(x for x in (e.get("note"), e.get("reason")) if x)
            table.add_row(ident, kind, markup(e["scope"] or ""), watts, markup(notes))
        else:
            table.add_row(ident, kind, "", "—", f"[dim]{markup(e['reason'])}[/dim]")
    return table


def format_server_table(servers: list[dict[str, Any]]) -> Table:
    """A rich Table of the servers `discover_servers` found (or one row saying none was)."""
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
    return t


def _redacted(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry)
    if isinstance(out.get("url"), str):
        out["url"] = redact_url(out["url"])
    if isinstance(out.get("reason"), str):
        out["reason"] = redact(out["reason"])
    return out


def format_spbm_table(entries: list[dict[str, Any]]) -> Table:
    """The DGX Spark's spbm driver (power/spark/report.py): channels, limits, PROCHOT, what it hides."""
    t = Table(title="DGX Spark power driver (spbm)", title_justify="left", show_header=False)
    t.add_column("")
    for e in entries:
        for line in summary_lines(e):
            t.add_row(markup(line))
    return t


def format_preflight(preflight: Preflight) -> Table:
    """The preflight (docs/design.md §4): each finding with what to do, or that the box is fit."""
    t = Table(title="Preflight: is this box fit to measure?", title_justify="left", show_header=False)
    t.add_column("")
    for line in preflight.findings:
        t.add_row(f"[yellow]{markup(line)}[/yellow]")
    if not preflight.findings:
        t.add_row("no finding: what could be read here is fit to measure")
    for name, why in preflight.checks.items():
        if str(why).startswith("n/a"):
            t.add_row(f"[dim]not checked: {markup(name)}: {markup(str(why).removeprefix('n/a: '))}[/dim]")
    return t


def run(args: argparse.Namespace) -> int:
    power = power_report()
    spbm = spbm_report()
    servers = [_redacted(s) for s in discover_servers(args.url or None)]
    # the servers found are the ones a bench would measure: their GPU use is no other job
    preflight = api.preflight([s["url"] for s in servers if s.get("healthy") and isinstance(s.get("url"), str)])
    if args.json:
        doc: dict[str, Any] = {"power_sources": power, "servers": servers}
        if spbm:  # only on a Spark with the driver
            doc["spbm"] = spbm
        doc["preflight"] = {"findings": preflight.findings, "checks": preflight.checks}
        print(json.dumps(doc, indent=2))
        return ExitCode.OK
    con = Console()
    con.print(format_power_table(power))
    if spbm:
        con.print(format_spbm_table(spbm))
    con.print(format_server_table(servers))
    con.print(format_preflight(preflight))
    return ExitCode.OK
