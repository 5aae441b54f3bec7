"""Erasing llama-server's slots before a depth step: only a launched server, a refusal remembered."""

from __future__ import annotations

from typing import Any

from precmon.measure.depth.slots import NOTE_NOT_ERASED, erase_slots
from precmon.servers.base import ServerError
from precmon.servers.protocols.llamacpp import LlamaCppServer


class Slots(LlamaCppServer):
    def __init__(self, cells: list[int], refuse: bool = False) -> None:
        super().__init__("http://127.0.0.1:9")
        self.cells, self.refuse, self.asked = cells, refuse, []

    def erase_slot(self, id_slot: int) -> int | None:
        self.asked.append(id_slot)
        if self.refuse:
            raise ServerError("HTTP 501: This server does not support slots action. Start it with `--slot-save-path`")
        if id_slot >= len(self.cells):
            raise ServerError("HTTP 400: Invalid slot ID")
        return self.cells[id_slot]


def test_a_shared_server_is_left_alone_and_noted():
    server, validity = Slots([70, 1503]), {}
    note = erase_slots(server, False, 2, validity)
    assert server.asked == [] and note is not None and note.startswith(NOTE_NOT_ERASED)
    assert validity["depth_slots"]["erased"] is False and "not launched" in validity["depth_slots"]["reason"]


def test_a_launched_server_has_every_slot_erased_each_step():
    server, validity = Slots([70, 1503, 1503]), {}
    assert erase_slots(server, True, 3, validity) is None
    assert erase_slots(server, True, 3, validity) is None
    assert server.asked == [0, 1, 2, 0, 1, 2]
    assert validity["depth_slots"] == {"erased": True, "steps": 2, "slots": 3, "cells_erased": 2 * 3076}


def test_fewer_slots_than_props_said_stops_at_the_first_missing_one():
    server, validity = Slots([5]), {}
    assert erase_slots(server, True, 4, validity) is None
    assert server.asked == [0, 1] and validity["depth_slots"]["slots"] == 1


def test_a_refusal_is_noted_once_and_not_asked_again():
    server, validity = Slots([], refuse=True), {}
    note = erase_slots(server, True, None, validity)
    assert note is not None and "refused" in note and "--slot-save-path" in note
    assert erase_slots(server, True, None, validity) is None and server.asked == [0]
    assert validity["depth_slots"]["erased"] is False


def test_other_servers_are_not_touched():
    validity: dict[str, Any] = {}
    assert erase_slots(object(), True, 4, validity) is None and validity == {}  # type: ignore[arg-type]


def test_a_single_slot_server_is_neither_erased_nor_noted():
    # no other slot holds cells: llama-server cuts its one slot back to the prefix a new prompt shares
    for launched in (True, False):
        server, validity = Slots([70]), {}
        assert erase_slots(server, launched, 1, validity) is None
        assert server.asked == [] and validity == {}
