"""`BigDigits`: Textual's `Digits` drawn 5 rows tall (`precmon.tui.big_font`) where it fits.

A subclass, so `.value`, `.update()` and a `Digits` query keep working; it picks, per width,
the 5-row font doubled across (6 cells a digit), the 5-row font, or Textual's own 3-row digits
when neither fits (a long number in a narrow readout).
"""

from __future__ import annotations

from rich.align import Align
from rich.text import Text
from textual.app import RenderResult
from textual.geometry import Size
from textual.widgets import Digits

from precmon.tui.big_font import ROWS, best_scale, big_lines


class BigDigits(Digits):
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

    def render(self) -> RenderResult:
        scale = self._scale(self.content_size.width)
        lines = big_lines(self.value, scale) if scale else None
        if lines is None:
            return super().render()
        return Align(Text("\n".join(lines), style=self.rich_style), "center")
