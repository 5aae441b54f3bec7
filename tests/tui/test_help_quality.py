"""The help screen defines quality whole (report/quality.py QUALITY_DEFINITION, with the bands the
advice uses), in the place of the metric glossary's short entry."""

from __future__ import annotations

from rich.console import Console

from precmon.report.analysis.quality import QUALITY_DEFINITION
from precmon.tui.screens.help import help_renderable


def test_help_shows_the_quality_definition_and_bands():
    console = Console(width=400, record=True, color_system=None)
    console.print(help_renderable())
    text = " ".join(console.export_text().split())
    assert " ".join(QUALITY_DEFINITION.split()) in text
    assert "near-lossless: mean KL ≤ 0.01 nats and same top ≥ 95%" in text and "cannot be judged" in text.casefold()
