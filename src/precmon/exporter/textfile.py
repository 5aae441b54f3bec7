"""The exposition written atomically for node_exporter's textfile collector.

node_exporter reads `*.prom` files in its textfile directory whenever it is scraped; a file
caught half-written would be a parse error (and a gap in every series). So the text goes to a
temporary file in the same directory (same filesystem: the rename is atomic; a name not ending
in `.prom`, so the collector never reads it), is fsynced, then `os.replace`s the old file.
"""

from __future__ import annotations

from pathlib import Path

from precmon.measure.results import write_text_atomic


def write_atomic(path: Path | str, data: bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old file or the new one, never a part.

    Raises OSError (the temporary file is removed) when the directory cannot take it. The file is
    0644: node_exporter may run as another user.
    """
    write_text_atomic(Path(path), data.decode("utf-8"), make_parents=False, mode=0o644)
