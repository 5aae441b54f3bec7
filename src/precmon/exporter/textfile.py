"""The exposition written atomically for node_exporter's textfile collector.

node_exporter reads `*.prom` files in its textfile directory whenever it is scraped; a file
caught half-written would be a parse error (and a gap in every series). So the text goes to a
temporary file in the same directory (same filesystem: the rename is atomic; a name not ending
in `.prom`, so the collector never reads it), is fsynced, then `os.replace`s the old file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, data: bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old file or the new one, never a part.

    Raises OSError (the temporary file is removed) when the directory cannot take it.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: node_exporter may run as another user
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
