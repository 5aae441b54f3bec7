"""What a sweep reports while it runs. The TUI turns these into messages; headless mode prints
them. Small frozen dataclasses, named for what happened."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from precmon.core.schema import Run, VariantResult


@dataclass(frozen=True)
class VariantStarted:
    label: str
    index: int
    total: int
    strategy: str
    precision: str | None = None  # as the sweep file says (a bench learns its own later)
    model: str | None = None


@dataclass(frozen=True)
class Progress:
    label: str
    done: int
    total: int
    text: str


@dataclass(frozen=True)
class RunLanded:
    label: str
    run: Run


@dataclass(frozen=True)
class VariantFinished:
    result: VariantResult
    results_path: Path


@dataclass(frozen=True)
class Log:
    text: str


@dataclass(frozen=True)
class SweepFinished:
    results_path: Path
    interrupted: bool


SweepEvent = VariantStarted | Progress | RunLanded | VariantFinished | Log | SweepFinished
