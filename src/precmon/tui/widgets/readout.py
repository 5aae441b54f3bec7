"""`Readout`: one of watch mode's big numbers, its title above and its provenance below.

One widget draws all three parts a line at a time (Textual's line API) from strips made once per
content and width; its border, padding and margin stay CSS (`Readout`, `Readout.-stale`). The
number is drawn in the 5-row font (`precmon.tui.big_font`, doubled across where it fits), else in
Textual's 3-row digits, centred. Watch mode repaints its readouts every refresh: as a container
of three widgets each readout cost the compositor four widgets to walk on every repaint, and a
changed number repaints only its own rows now (the title and the source stay as drawn).
"""

from __future__ import annotations

import textwrap

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.renderables.digits import Digits as DigitsRenderable
from textual.strip import Strip
from textual.widget import Widget

from precmon.report.fmt import format_value
from precmon.tui.big_font import best_scale, big_lines
from precmon.tui.widgets.pieces import Line, StripMaker, centred
from precmon.untrusted import visible

SOURCE_ROWS = 2  # the provenance line folds onto a second row; both are kept so readouts line up
NO_VALUE = "--"


def fold(text: str, width: int) -> list[str]:
    """`text` folded at spaces into lines of at most `width` characters (a wide character can
    still overrun: `centred` cuts it)."""
    return textwrap.wrap(text, max(1, width), break_on_hyphens=False) or [""]


def digit_rows(value: str, width: int) -> list[str]:
    """`value` as the rows of the largest font that fits `width` (Textual's 3-row digits, cut
    by the caller, when the 5-row one does not)."""
    scale = best_scale(value, width)
    lines = big_lines(value, scale) if scale else None
    if lines is not None:
        return lines
    rows, row = [], ""
    for segment in DigitsRenderable(value).render(Style(bold=True)):
        if not isinstance(segment, Segment):
            continue
        if segment.text == "\n":
            rows.append(row)
            row = ""
        else:
            row += segment.text
    return rows


def readout_lines(title: str, value: str, source: str, width: int, stale: bool = False) -> list[Line]:
    """Every content line of a readout `width` cells wide: the title (bold), the number (bold;
    dim when stale), the source (dim) on at least `SOURCE_ROWS` rows; all centred."""
    titles = [centred([(t, "bold")], width) for t in fold(visible(title), width)]
    digits = [centred([(d, "dim" if stale else "bold")], width) for d in digit_rows(value, width)]
    sources = [centred([(s, "dim")], width) for s in fold(visible(source), width)]
    sources += [[] for _ in range(SOURCE_ROWS - len(sources))]
    return [*titles, *digits, *sources]


class Readout(Widget):
    """One big number; the app calls `show`, `retitle` and `mark_stale` (`WatchView`)."""

    def __init__(self, title: str, id: str) -> None:
        super().__init__(id=id, classes="readout")
        self._title, self._value, self._source = title, NO_VALUE, ""
        self._lines: list[Line] = []
        self._drawn: Size | None = None  # the outer size `_lines` were made for
        self._strips: dict[int, Strip] = {}  # content row → its strip, made on first draw
        self._maker: StripMaker | None = None  # on the widget's style (`rich_style` walks the DOM)
        # the readouts side by side (`WatchView`): each is as tall as the tallest of them, so a
        # source folding onto a third row at 80×24 does not make one box taller
        self.peers: tuple[Readout, ...] = ()

    @property
    def value(self) -> str:
        """The number as shown ("--": none yet)."""
        return self._value

    @property
    def title(self) -> str:
        return self._title

    @property
    def source(self) -> str:
        return self._source

    def show(self, value: float | None, source: str, unsure: bool = False) -> None:
        """A new figure; `unsure`: it may be off (a warning border, and the source says so in words)."""
        self.remove_class("-stale")
        self.set_class(unsure, "-unsure")
        self._set(NO_VALUE if value is None else format_value(value), source, self._title)

    def retitle(self, title: str) -> None:
        """The title names the scope ("watts · GPU"): set when it changes."""
        self._set(self._value, self._source, title)

    def mark_stale(self, source: str) -> None:
        """The number shown is no longer live: dim it and say so (words, for NO_COLOR)."""
        if self._value in (NO_VALUE, ""):
            return
        self.add_class("-stale")
        self._set(self._value, source, self._title)

    def _set(self, value: str, source: str, title: str) -> None:
        if (value, source, title) == (self._value, self._source, self._title):
            return
        self._value, self._source, self._title = value, source, title
        if self._drawn is None:  # not drawn yet (or restyled): the next draw makes every line
            self.refresh()
            return
        width = self.content_size.width
        old, self._lines = self._lines, self._make_lines(width)
        if len(old) != len(self._lines):  # the font or a fold changed the height: the row's too
            self._strips.clear()
            self.refresh(layout=True)
            for peer in self.peers:
                peer.refresh(layout=True)
            return
        changed = [y for y, (a, b) in enumerate(zip(old, self._lines, strict=True)) if a != b]
        for y in changed:
            self._strips.pop(y, None)
        if changed:  # only the rows that changed are drawn again
            self.refresh(Region(0, changed[0], width, changed[-1] - changed[0] + 1))

    def _make_lines(self, width: int) -> list[Line]:
        return readout_lines(self._title, self._value, self._source, width, self.has_class("-stale"))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The tallest of this readout and its peers at `width` (they share the row's width)."""
        return max(len(r._make_lines(width)) for r in (self, *self.peers))

    def notify_style_update(self) -> None:
        self._drawn, self._maker = None, None  # colours or the stale dimming changed: every line is made again
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        outer = self.outer_size  # cheap, unlike the content size (asked once a line)
        if outer != self._drawn:
            self._drawn, self._lines, self._strips = outer, self._make_lines(self.content_size.width), {}
        strip = self._strips.get(y)
        if strip is None:
            width = self.content_size.width
            line = self._lines[y] if y < len(self._lines) else []
            if self._maker is None:
                self._maker = StripMaker(self.rich_style)
            strip = self._strips[y] = self._maker.strip(line, width)
        return strip
