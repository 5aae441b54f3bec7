"""Containers that draw nothing of their own, declared so (Textual's `Widget.BLANK`).

Textual's compositor draws every widget whose clip overlaps a changed region, each from its
styles cache: about 0.1 ms a widget for its colours, opacity and filters, however few its lines
(measured: bench/README, docs/benchmarks.md "TUI CPU beside nvitop"). Watch mode repaints a readout
every refresh beneath the screen, two rows and the header, footer and progress bars, none of
which draws anything but its background: a blank widget hands the compositor one blank strip
of that background per line instead. Only for widgets with no border, no padding colour and no
content of their own (their children draw themselves). A blank widget's background skips the
app's filters, so under NO_COLOR (Textual's greyscale filter) they draw as other widgets do.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header


def _blank(widget: Widget) -> bool:
    return not widget.app.no_color  # the greyscale filter must see the background


class BlankScreen(Screen[Any]):
    BLANK = property(_blank)


class Row(Horizontal):
    BLANK = property(_blank)


class Column(Vertical):
    BLANK = property(_blank)


class BlankScroll(VerticalScroll):
    BLANK = property(_blank)


class BlankHeader(Header):
    BLANK = property(_blank)


class BlankFooter(Footer):
    BLANK = property(_blank)
