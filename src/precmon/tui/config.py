"""What the TUI was started with: one frozen value, built by the command that starts it.

`cli/commands/tui_cmd.py` builds a `TuiConfig` from the parsed arguments (the server flags, the
settings table's report group, `--refresh-s`, `--sweep`, `--out`); tests and scripts build one by
keyword. The app never changes it: what changes while it runs (the server discovery found, the
server a sweep variant measures) is the app's own state, and `ServerConfig` is what a worker is
handed for the server it talks to now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precmon.core.settings import BenchSettings
from precmon.refresh import DEFAULT_REFRESH_S
from precmon.sweep.spec import SweepSpec


@dataclass(frozen=True)
class ServerConfig:
    """Which server to talk to and how: what the workers were given, not what they look up."""

    url: str | None = None
    model: str | None = None
    kind: str = "auto"
    api_key: str | None = None
    settings: BenchSettings = field(default_factory=BenchSettings.quick)


@dataclass(frozen=True)
class TuiConfig:
    """Every option of the TUI; with none it shows power and waits.

    Attributes:
        url, model, server_kind, api_key: the server to watch, bench and sweep (`--url`, `--model`,
            `--server`, `--api-key-env`'s value); without a URL the Server panel says so.
        settings: the plan of `b` (quick settings unless given).
        sweep_spec: `s`'s sweep: a spec or the path of a sweep file (None: every model the server lists).
        out_dir: the results folder (None: ./precmon-results/<session start>/).
        auto_sweep: start the sweep at mount (`precmon demo`, `precmon sweep` in a terminal).
        watch: open in the watch layout (`precmon watch`); drive: keep `--drive`'s measured load going.
        discover: without a URL, look on the usual local ports every 5 s until one answers.
        poll_server: watch the server's health, /metrics and live rate (tests turn it off).
        refresh_s: `--refresh-s` (`precmon.tui.pace`).
        report: how the results are judged (the settings table's report group: `--max-kld`).
        power_from: other nodes' exporters whose power every window adds (`--power-from`, a
            sweep file's `power_from`).
    """

    url: str | None = None
    model: str | None = None
    server_kind: str = "auto"
    api_key: str | None = None
    settings: BenchSettings = field(default_factory=BenchSettings.quick)
    sweep_spec: SweepSpec | str | Path | None = None
    out_dir: Path | None = None
    auto_sweep: bool = False
    watch: bool = False
    drive: bool = False
    discover: bool = False
    poll_server: bool = True
    refresh_s: float = DEFAULT_REFRESH_S
    report: Mapping[str, Any] = field(default_factory=dict)
    power_from: tuple[str, ...] = ()

    @property
    def server(self) -> ServerConfig:
        """The server given at start (discovery may find another: the app's `server_config`)."""
        return ServerConfig(self.url, self.model, self.server_kind, self.api_key, self.settings)

    @property
    def discovering(self) -> bool:
        """Look for a server at start: asked for, and no URL given (a URL always wins)."""
        return self.discover and not self.url
