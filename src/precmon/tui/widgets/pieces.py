"""Lines of styled pieces of text, and the strips Textual's line API draws from them.

The widgets repainted most (watch mode's readouts, the run chart) draw a line at a time from
strips made once per value and size, not from a Rich renderable laid out on each repaint. A line
is a list of (text, style name) pieces; style names are parsed once for the whole process.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

Piece = tuple[str, str]  # some text and its rich style ("bold", "dim", a colour; "": the widget's own)
Line = list[Piece]


def fit(line: Line, width: int, ellipsis: bool = False) -> Line:
    """`line` cut to at most `width` cells (wide characters counted as two); with `ellipsis`, a
    cut line ends in "…" (in the style of the piece it cut)."""
    if sum(cell_len(text) for text, _ in line) <= width:
        return line
    budget, out = (width - 1 if ellipsis else width), []
    for text, style in line:
        cells = cell_len(text)
        if cells >= budget:
            if budget > 0:
                out.append((set_cell_size(text, budget), style))
            if ellipsis:
                out.append(("…", style))
            break
        out.append((text, style))
        budget -= cells
    return out


def centred(line: Line, width: int) -> Line:
    """`line` cut to `width` cells and centred in them (as `text-align: center` places text)."""
    line = fit(line, width, ellipsis=True)
    spare = width - sum(cell_len(text) for text, _ in line)
    left = spare // 2
    return [(" " * left, ""), *line, (" " * (spare - left), "")]


class StripMaker:
    """Makes strips from lines on top of a widget's base style, each style name parsed once."""

    _PARSED: ClassVar[dict[str, Style]] = {}

    def __init__(self, base: Style) -> None:
        self.base = base
        self._styles: dict[str, Style] = {}

    def style(self, name: str) -> Style:
        if name not in self._styles:
            if name not in self._PARSED:
                self._PARSED[name] = Style.parse(name) if name else Style()
            self._styles[name] = self.base + self._PARSED[name]
        return self._styles[name]

    def strip(self, line: Line, width: int) -> Strip:
        """One line as a strip of exactly `width` cells (cut, or filled in the base style)."""
        segments = [Segment(text, self.style(name)) for text, name in line if text]
        return Strip(segments).crop_extend(0, width, self.base)
