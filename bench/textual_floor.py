"""What Textual itself costs, for `bench_tui_cpu.py`'s floor rows: an app of one line-API widget
that fills the screen and, every `--interval` seconds, repaints it all from strips made once (no
data, no layout, no threads of precmon's). With no `--interval` it never repaints: Textual idle.

    python bench/textual_floor.py [--interval S]

Its CPU beside precmon's says how much of watch mode's is the toolkit's repaint, and beside
nvitop's what a curses program pays for the same screen.
"""

from __future__ import annotations

import argparse

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.strip import Strip
from textual.widget import Widget


class Screenful(Widget):
    DEFAULT_CSS = "Screenful { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__()
        self.frame = 0
        self._strips: dict[tuple[int, int], Strip] = {}

    def render_line(self, y: int) -> Strip:
        width = self.outer_size.width
        key = (self.frame % 2, width)
        if key not in self._strips:
            self._strips[key] = Strip([Segment(("█▇▆▅▄▃▂▁" if self.frame % 2 else "▁▂▃▄▅▆▇█") * (width // 8 + 1))])
        return self._strips[key].crop(0, width)


class Floor(App[None]):
    def __init__(self, interval_s: float | None) -> None:
        super().__init__()
        self.interval_s = interval_s

    def compose(self) -> ComposeResult:
        yield Screenful()

    def on_mount(self) -> None:
        if self.interval_s:
            self.set_interval(self.interval_s, self._tick)

    def _tick(self) -> None:
        widget = self.query_one(Screenful)
        widget.frame += 1
        widget.refresh()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--interval", type=float, help="seconds between full-screen repaints (none: never)")
    Floor(p.parse_args().interval).run()


if __name__ == "__main__":
    main()
