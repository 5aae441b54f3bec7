"""What quality is scored on (docs/design.md §4 "Quality"): the settings a command line or a
sweep file gives, and the evaluation text they name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precmon.core import settings as table
from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.adaptive import TARGET_MASS, TOP_K_MAX
from precmon.measure.quality.text import TEXT


@dataclass(frozen=True)
class QualitySettings:
    """What to score on: P positions of `text` (named `text_name`), top-K of each, chosen by
    `convention` (measure/quality/windows.py).

    The defaults are the rows of `precmon.core.settings.QUALITY` (`quality_positions`,
    `quality_top_k`, `quality_convention`); `with_rows` applies what a command line or a sweep
    file gave.
    `target_mass` > 0 makes the top-K adaptive (measure/quality/adaptive.py): the baseline asks
    up to `top_k_max` per position and keeps the fewest tokens holding that share of its
    probability, at least `top_k`; 0 asks exactly `top_k` everywhere.
    """

    positions: int = table.BY_NAME["quality_positions"].default
    top_k: int = table.BY_NAME["quality_top_k"].default
    text: str = field(default=TEXT, repr=False)
    text_name: str = "built-in"
    target_mass: float = TARGET_MASS
    top_k_max: int = TOP_K_MAX
    convention: str = table.BY_NAME["quality_convention"].default


class QualityTextError(ValueError):
    """An evaluation text that cannot be used; str() is `FILE: why` (the caller names the key)."""


#: The QualitySettings field each quality row fills: its name less "quality_" (`quality_top_k`
#: → `top_k`); rows without one (`quality`, `quality_ref`) only turn scoring on or name a reference.
_FIELDS = {f.name for f in dataclasses.fields(QualitySettings)}


def with_rows(base: QualitySettings, values: Mapping[str, Any], folder: Path | None = None) -> QualitySettings:
    """`base` with the quality rows set in `values` applied: one loop over the settings table
    (`precmon.core.settings.QUALITY`), for the flags of `bench` (`vars(args)`) and a sweep file's
    tables alike. A TEXT row names a file, read now (relative to `folder` when not absolute), so
    an unusable one is found before anything is measured.

    Raises:
        QualityTextError: `FILE: why` for an unreadable, empty, oversized or non-UTF-8 text.
    """
    changes: dict[str, Any] = {}
    for row in table.QUALITY:
        name, value = row.name.removeprefix("quality_"), values.get(row.dest, values.get(row.name))
        if value is None or name not in _FIELDS:
            continue
        if row.kind != table.TEXT:
            changes[name] = value
            continue
        file = Path(value).expanduser()
        file = folder / file if folder is not None and not file.is_absolute() else file
        try:
            changes[name] = read_quality_text(file)
        except ValueError as exc:
            raise QualityTextError(f"{file}: {exc}") from None
        changes[f"{name}_name"] = file.name
    return dataclasses.replace(base, **changes)


MAX_TEXT_BYTES = 4 * 2**20


def read_quality_text(path: Path) -> str:
    """The evaluation text of `--quality-text` / `quality_text`.

    Raises:
        ValueError: one line saying what is wrong with the file (the caller names it).
    """
    try:
        with open_file_arg(path) as f:  # bounded: a device such as /dev/zero has no end
            data = f.read(MAX_TEXT_BYTES + 1)
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except FileArgError as exc:
        raise ValueError(str(exc)) from None
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"larger than {MAX_TEXT_BYTES // 2**20} MiB: not an evaluation text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise ValueError("empty: nothing to score on")
    return text
