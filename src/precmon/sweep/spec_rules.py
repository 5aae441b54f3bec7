"""The sweep file's rules over all its variants (docs/design.md §6): an interleaved order only
where every variant can alternate request by request, a baseline that is a variant, and one
quality text for every scored variant. `sweep/spec.py` checks each table; this checks the sweep
as a whole, with the same one-line errors (`err` names the file, the line and the key).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from precmon.core.settings import BenchSettings
from precmon.measure.quality.settings import QualitySettings

#: Makes the one-line error for (table, index, key or None, message); the caller raises it.
ErrorAt = Callable[[str, int, "str | None", str], Exception]


class Planned(Protocol):
    """What these rules read of a variant (`sweep/spec.py Variant`, which imports this module)."""

    @property
    def label(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def launch(self) -> list[str] | None: ...
    @property
    def strategy(self) -> str: ...
    @property
    def settings(self) -> BenchSettings: ...
    @property
    def quality(self) -> QualitySettings | None: ...


def check_sweep(
    variants: Sequence[Planned],
    raw: list[dict[str, Any]],
    defaults: dict[str, Any],
    base: QualitySettings,
    err: ErrorAt,
) -> None:
    """The rules of the sweep as a whole: order, baseline, one quality text."""
    order = str(defaults.get("order", "sequential"))
    if order == "interleaved":
        _check_interleavable(variants, raw, err)
    baseline = defaults.get("baseline")
    if baseline is not None and baseline not in {v.label for v in variants}:
        raise err(
            "defaults",
            0,
            "baseline",
            f"{baseline!r} is not a variant's label (have: {', '.join(v.label for v in variants)})",
        )
    _check_quality_texts(variants, raw, base, baseline or variants[0].label, err)
    if order == "interleaved" and any(v.quality is not None for v in variants):
        i = next(i for i, v in enumerate(variants) if v.quality is not None)
        table, index = ("variant", i) if "quality" in raw[i] else ("defaults", 0)
        raise err(table, index, "quality", 'quality scoring runs after each variant\'s plan; use order = "sequential"')


def _check_quality_texts(
    variants: Sequence[Planned], raw: list[dict[str, Any]], base: QualitySettings, baseline: str, err: ErrorAt
) -> None:
    """Every scored variant is scored on the baseline's text: one of another `quality_text` would
    find its reference unusable only after the baseline and itself were measured."""
    b = next(i for i, v in enumerate(variants) if v.label == baseline)
    ref = variants[b].quality or base
    for i, v in enumerate(variants):
        if v.quality is not None and i != b and v.quality.text != ref.text:
            at = i if "quality_text" in raw[i] else b if "quality_text" in raw[b] else None
            where = ("variant", at) if at is not None else ("defaults", 0)
            raise err(
                *where,
                "quality_text",
                f"{v.label!r} would be scored on {v.quality.text_name}, the baseline {baseline!r} "
                f"on {ref.text_name}: a reference is for one text",
            )


def _check_interleavable(variants: Sequence[Planned], raw: list[dict[str, Any]], err: ErrorAt) -> None:
    """Interleaving alternates variants request by request: only variants that switch by `model`
    on one shared endpoint can do that (a launched server would start and stop per request, two
    URLs would be two machines' drift). Anything else is refused here, before measuring."""
    shared = variants[0].url
    for i, v in enumerate(variants):
        if v.strategy != "model":
            key = "launch" if v.launch else "url"
            raise err(
                "variant",
                i,
                key if key in raw[i] else None,
                f"order = \"interleaved\" needs every variant switched by 'model' on one shared endpoint; "
                f"{v.label!r} uses '{v.strategy}' (use order = \"sequential\")",
            )
        if v.url != shared:
            raise err(
                "variant",
                i,
                "url" if "url" in raw[i] else None,
                f'order = "interleaved" needs one shared endpoint; {v.label!r} uses a different url',
            )
        if v.settings.target_ci_pct is not None:  # a CI target decides repeat counts as runs land
            raise err(
                "variant",
                i,
                "target_ci_pct" if "target_ci_pct" in raw[i] else None,
                f'order = "interleaved" runs a fixed number of repeats; {v.label!r} has a target_ci_pct '
                '(use order = "sequential" for adaptive repeats)',
            )
