"""A 5-row block font for watch mode's numbers: twice the height of Textual's 3-row `Digits`.

A room reads the watch screen from metres away; 5 rows of full blocks are legible where the
3-row line-drawing digits are not. Each glyph is 3 cells wide by 5 rows (a cell is about twice
as tall as wide, so at `scale` 2 every cell is doubled across: a 6×5 glyph, close to square
strokes). Only what `precmon.report.fmt.format_value` writes for a number is drawn: digits,
".", "-", "+", "e" and the "--" of no value; anything else returns None (the caller falls back).
Plain Python, no textual.
"""

from __future__ import annotations

ROWS = 5
GAP = 1  # blank cells between glyphs (times the scale)

GLYPHS: dict[str, tuple[str, str, str, str, str]] = {
    "0": ("###", "# #", "# #", "# #", "###"),
    "1": (" # ", "## ", " # ", " # ", "###"),
    "2": ("###", "  #", "###", "#  ", "###"),
    "3": ("###", "  #", "###", "  #", "###"),
    "4": ("# #", "# #", "###", "  #", "  #"),
    "5": ("###", "#  ", "###", "  #", "###"),
    "6": ("###", "#  ", "###", "# #", "###"),
    "7": ("###", "  #", "  #", "  #", "  #"),
    "8": ("###", "# #", "###", "# #", "###"),
    "9": ("###", "# #", "###", "  #", "###"),
    ".": (" ", " ", " ", " ", "#"),
    "-": ("   ", "   ", "###", "   ", "   "),
    "+": ("   ", " # ", "###", " # ", "   "),
    "e": ("   ", "###", "###", "#  ", "###"),
}


def big_width(text: str, scale: int = 1) -> int | None:
    """Cells `text` takes at `scale`; None when a character has no glyph."""
    if not text or any(ch not in GLYPHS for ch in text):
        return None
    return sum(len(GLYPHS[ch][0]) * scale for ch in text) + GAP * scale * (len(text) - 1)


def big_lines(text: str, scale: int = 1) -> list[str] | None:
    """`text` as `ROWS` lines of "█" and spaces at `scale` (cells doubled across); None: no glyph."""
    if big_width(text, scale) is None:
        return None
    gap = " " * (GAP * scale)
    lines = []
    for r in range(ROWS):
        parts = ["".join(("█" if c == "#" else " ") * scale for c in GLYPHS[ch][r]) for ch in text]
        lines.append(gap.join(parts))
    return lines


def best_scale(text: str, width: int) -> int:
    """The largest scale (2, 1) at which `text` fits `width` cells; 0 when it does not fit at all."""
    for scale in (2, 1):
        w = big_width(text, scale)
        if w is not None and w <= width:
            return scale
    return 0
