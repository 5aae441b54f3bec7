"""`BigDigits`: Textual's `Digits` drawn 5 rows tall (`precmon.tui.big_font`) where it fits.

A subclass, so `.value`, `.update()` and a `Digits` query keep working; it picks, per width,
the 5-row font doubled across (6 cells a digit), the 5-row font, or Textual's own 3-row digits
when neither fits (a long number in a narrow readout). The big font is drawn a line at a time
(Textual's line API) from strips made once per value and width (and again after a style change):
watch mode repaints its readouts every refresh, and a renderable (Rich `Align` + `Text`) cost
four times as much.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widgets import Digits

from precmon.tui.big_font import ROWS, best_scale, big_lines


class BigDigits(Digits):
    def __init__(self, value: str = "", **kwargs: object) -> None:
        super().__init__(value, **kwargs)  # type: ignore[arg-type]
        self._strips: tuple[tuple[str, int], list[Strip]] | None = None  # ((value, width), its lines)

    def _scale(self, width: int) -> int:
        return best_scale(self.value, width)

    def update(self, value: str) -> None:
        width = self.content_size.width
        scale = self._scale(width)
        super().update(value)  # a layout when the 3-row digits change width
        if self._scale(width) != scale:
            self.refresh(layout=True)  # the height follows the font that fits the new value

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return ROWS if self._scale(width) else super().get_content_height(container, viewport, width)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        lines = big_lines(self.value, 1)
        return (
            max(len(lines[0]), super().get_content_width(container, viewport))
            if lines
            else super().get_content_width(container, viewport)
        )

    def notify_style_update(self) -> None:
        self._strips = None  # the colours or the weight changed (a stale readout is dimmed)
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        key = (self.value, width)
        if self._strips is None or self._strips[0] != key:
            scale = self._scale(width)
            lines = big_lines(self.value, scale) if scale else None
            if lines is None:
                return super().render_line(y)  # Textual's 3-row digits, through `render`
            style = self.rich_style
            self._strips = (key, [_centred(line, width, style) for line in lines])
        strips = self._strips[1]
        return strips[y] if y < len(strips) else Strip.blank(width)


def _centred(line: str, width: int, style: Style) -> Strip:
    """One line of the big font centred in `width` cells (as `text-align: center` places it)."""
    left = (width - len(line)) // 2
    segments = [Segment(" " * left, style), Segment(line, style), Segment(" " * (width - left - len(line)), style)]
    return Strip([s for s in segments if s.text], width)
