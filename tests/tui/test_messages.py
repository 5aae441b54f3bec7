"""Every message the TUI posts is a dataclass in `precmon.tui.messages`, the one place to read
what can happen; nothing else in precmon.tui subclasses `Message`."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

from textual.message import Message

import precmon.tui
from precmon.tui import messages


def _subclasses(cls: type) -> list[type]:
    return [c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))]


def test_messages_are_dataclasses_in_one_module():
    for info in pkgutil.walk_packages(precmon.tui.__path__, "precmon.tui."):
        importlib.import_module(info.name)  # every module's classes, nested ones too, are defined now
    ours = [c for c in _subclasses(Message) if c.__module__.startswith("precmon.")]
    assert len(ours) >= 11  # the power, server and measure workers' messages
    assert {c.__module__ for c in ours} == {"precmon.tui.messages"}, sorted(
        f"{c.__module__}.{c.__qualname__}" for c in ours
    )
    assert all(dataclasses.is_dataclass(c) for c in ours)


def test_only_the_steady_messages_collapse():
    from precmon.core.schema import Run
    from precmon.servers.watch.live_rate import LiveRate
    from precmon.servers.watch.snapshot import ServerSnapshot

    rate = LiveRate(1.0, "src", 1.0)
    assert messages.LiveRateRead(rate).can_replace(messages.LiveRateRead(rate, 0.1))
    assert messages.ServerProbed(ServerSnapshot("u", True)).can_replace(
        messages.ServerProbed(ServerSnapshot("u", False))
    )
    assert messages.MetricsScraped(None).can_replace(messages.MetricsScraped(None, "e"))
    run = Run("decode", 1, 1)
    assert not messages.DriveMeasured(run, None, None).can_replace(messages.DriveMeasured(run, None, None))
    assert not messages.DriveStopped("e", 1, 2.0).can_replace(messages.DriveStopped("e", 2, 4.0))
    assert messages.DriveStopped("e", 1, 2.0, 5.0).since_unix_s == 5.0
