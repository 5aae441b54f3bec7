"""`precmon doctor`'s table: rendered by the CLI from the power layer's plain entries.

The expected text is what the table looked like when it was still drawn in power/doctor.py, so a
change in how it reads shows here. Entry strings come from sysfs and drivers: markup in them is
shown, never interpreted.
"""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console

from precmon.cli.commands.doctor_cmd import format_power_table, format_server_table

ENTRIES = [
    {
        "id": "hwmon3:sys_total",
        "kind": "spbm",
        "label": "sys_total",
        "scope": "system",
        "watts": 38.21,
        "available": True,
        "reason": None,
        "note": "whole board",
    },
    {
        "id": "nvml:0",
        "kind": "nvml",
        "label": "GB10",
        "scope": "gpu",
        "watts": None,
        "available": True,
        "reason": "no reading in the sampling window",
    },
    {
        "id": "rapl",
        "kind": "rapl",
        "label": "rapl",
        "scope": None,
        "watts": None,
        "available": False,
        "reason": "denied",
    },
]

EXPECTED = """\
Power sources
┏━━━━━━━━━━━━━━━━━━┳━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ id               ┃ kind ┃ scope  ┃  watts ┃ notes                             ┃
┡━━━━━━━━━━━━━━━━━━╇━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ hwmon3:sys_total │ spbm │ system │ 38.2 W │ whole board                       │
│ nvml:0           │ nvml │ gpu    │      — │ no reading in the sampling window │
│ rapl             │ rapl │        │      — │ denied                            │
└──────────────────┴──────┴────────┴────────┴───────────────────────────────────┘
"""


def _text(table) -> str:
    con = Console(width=100, record=True)
    con.print(table)
    return "\n".join(line.rstrip() for line in con.export_text().splitlines()) + "\n"


def test_power_table_reads_as_before():
    assert _text(format_power_table(ENTRIES)) == EXPECTED


def test_markup_in_entries_is_shown_not_interpreted():
    odd = dict(ENTRIES[0], id="hwmon9:[/]", note="[bold]x[/bold]")
    gone = dict(ENTRIES[2], reason="[/dim] no [red]")
    out = _text(format_power_table([odd, gone]))
    assert "hwmon9:[/]" in out and "[bold]x[/bold]" in out and "[/dim] no [red]" in out
    servers = _text(format_server_table([{"url": "http://h:1", "kind": "[x]", "models": ["m[/]"], "healthy": True}]))
    assert "[x]" in servers and "m[/]" in servers
    assert "(none found)" in _text(format_server_table([]))


def test_the_power_layer_does_not_render():
    code = "import sys, precmon.power.doctor; sys.exit(1 if 'rich' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
