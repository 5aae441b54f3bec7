"""cli/signals.py in-process: the first signal raises, a second within the grace is held, any
signal inside `holding()` is held, and after the grace a signal raises again."""

from __future__ import annotations

import os
import signal
import time

import pytest

from precmon.cli import signals


def _sigint() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)  # the handler runs at the next bytecode boundary of the main thread


def test_first_raises_second_is_held_then_raises_again(monkeypatch):
    monkeypatch.setattr(signals, "SAVE_GRACE_S", 0.3)
    with signals.installed():
        with pytest.raises(KeyboardInterrupt):
            _sigint()
        _sigint()  # 10 ms later: held, the save goes on
        with signals.holding() as held:
            assert held.held == 1
        time.sleep(0.35)
        with pytest.raises(KeyboardInterrupt):
            _sigint()  # after the grace: a hung save can still be interrupted


def test_holding_holds_even_the_first(monkeypatch):
    with signals.installed():
        with signals.holding() as held:
            _sigint()
            _sigint()
        assert held.held == 2


def test_previous_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    with signals.installed():
        pass
    assert signal.getsignal(signal.SIGINT) is before
