"""Empty llama-server's slot caches before each step of the plan, when precmon launched it.

With a unified KV cache (`-kvu`, llama.cpp's default when the slot count is auto) every slot's
cached cells stay in one buffer and a request attends over the whole used part of it (masked),
so a request pays for the cells that earlier requests left in other slots: the depth curve
flattens below the plain decode, a TTFT after long prefills doubles, the first decode after the
depth steps slows (docs/benchmarks.md "Why the constants" has the figures; docs/design.md §4
"Context depth"). `POST /slots/{id}?action=erase`
empties a slot; every step starts on empty slots, as llama-bench's do. Only a server precmon
launched is erased: a shared server's caches belong to its other users. What was done goes to
`validity.depth_slots` (named when only depth steps were erased); a server left as it was gets
one note saying why (at its first depth step, where the effect is checked).
"""

from __future__ import annotations

from typing import Any

from precmon.servers.base import ErasesSlots, Server, ServerError
from precmon.untrusted import visible

NOTE_NOT_ERASED = "slots not erased"
#: Slots tried when /props gives no `total_slots` (llama-server's auto is 4).
DEFAULT_SLOTS = 4


def erase_slots(server: Server, launched: bool, slots: object, validity: dict[str, Any]) -> str | None:
    """Erase every slot of a launched llama-server (any `ErasesSlots`); update `validity["depth_slots"]`.

    Returns a note line when the slots were left as they were (not launched, or the server
    refused), None otherwise. A refusal is remembered: later steps do not ask again."""
    if not isinstance(server, ErasesSlots):  # llama.cpp's alone; the TUI's wrapper keeps it (background.py)
        return None
    if slots == 1:  # no other slot: a new prompt cuts the one slot's cells back to what it shares
        return None
    fig = validity.setdefault("depth_slots", {"erased": False, "steps": 0, "slots": 0, "cells_erased": 0})
    if not launched:
        fig["reason"] = "not launched by precmon: a shared server's caches belong to its other users"
        return (
            f"{NOTE_NOT_ERASED}: precmon did not launch this server, so the other slots' cached prompts stay in a "
            "unified KV cache (-kvu) during the depth runs; see depth-baseline-mismatch"
        )
    if "refused" in fig:
        return None
    n = slots if isinstance(slots, int) and slots > 0 else DEFAULT_SLOTS
    cells = 0
    for id_slot in range(n):
        try:
            cells += server.erase_slot(id_slot) or 0
        except ServerError as exc:
            if id_slot == 0:
                fig["refused"] = visible(str(exc))[:200]
                return (
                    f"{NOTE_NOT_ERASED}: the server refused /slots/0?action=erase ({fig['refused']}), so each request "
                    "paid for the cells earlier ones left in other slots of a unified KV cache (-kvu)"
                )
            break  # fewer slots than /props said: the rest do not exist
        fig["slots"] = max(fig["slots"], id_slot + 1)
    fig["erased"] = True
    fig["steps"] += 1
    fig["cells_erased"] += cells
    return None
