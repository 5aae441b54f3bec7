"""Watch mode's big tok/s window: a steady server reads plainly; late reads, slow answers, an
uneven pace and a silence are named instead of shown as fact (the figures of docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from precmon.servers.watch.live_rate import LiveRate, SlotRead, slots_rate
from precmon.servers.watch.rate_window import RateWindow


def _reading(end_s: float, tok_s: float, interval_s: float = 1.0, timing_s: float = 0.002) -> LiveRate:
    return LiveRate(tok_s, "llama.cpp /slots", interval_s, 1, taken_s=end_s, timing_s=timing_s)


def _fill(w: RateWindow, rates: list[float], start_s: float = 100.0, **kw: float) -> float:
    t = start_s
    for r in rates:
        t += kw.get("interval_s", 1.0)
        w.add(_reading(t, r, **kw), t)
    return t


def test_steady_readings_are_shown_plainly_over_the_window():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [30.0, 31.0, 29.0, 30.0, 30.0, 32.0, 28.0])
    got = w.rate(end + 0.5)
    assert got is not None and got.unsure is None and not got.stale
    assert got.span_s == pytest.approx(5.0)  # the last five one-second readings
    assert got.tok_s == pytest.approx((29 + 30 + 30 + 32 + 28) / 5)


def test_a_bursty_server_is_uneven_not_a_one_second_figure():
    """The real model on the loaded box: 0 to 45 tok/s from one second to the next (measured)."""
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [2.0, 45.0, 4.0, 41.0, 3.0])
    got = w.rate(end)
    assert got is not None and got.unsure is not None and "uneven" in got.unsure
    assert got.tok_s == pytest.approx(19.0)


def test_late_reads_are_named():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [30.0, 30.0])
    w.add(_reading(end + 2.4, 30.0, interval_s=2.4), end + 2.4)  # precmon's own read came 2.4 s after the last
    got = w.rate(end + 2.5)
    assert got is not None and got.unsure is not None and "late" in got.unsure


def test_slow_answers_are_named():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [30.0, 30.0, 30.0], timing_s=0.15)  # a /slots answer of 300 ms round trip
    got = w.rate(end)
    assert got is not None and got.unsure is not None and "slow answers" in got.unsure


def test_no_reading_for_three_polls_is_stale():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [30.0, 30.0, 30.0])
    assert not w.rate(end + 2.0).stale  # type: ignore[union-attr]
    got = w.rate(end + 3.5)
    assert got is not None and got.stale and got.unsure is not None and "stale" in got.unsure


def test_a_reading_without_a_number_empties_the_window():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [30.0, 30.0])
    w.add(LiveRate(None, "llama.cpp /slots", error="connection refused"), end + 1)
    assert w.rate(end) is None


def test_low_rates_a_token_apart_are_few_tokens_not_uneven():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [1.0, 2.0, 1.0, 2.0])  # a token more or less a second is no swing, but few
    got = w.rate(end)
    assert got is not None and got.unsure is not None and "only 6 tokens" in got.unsure


def test_an_idle_server_reads_zero_plainly():
    w = RateWindow(poll_s=1.0)
    end = _fill(w, [0.0, 0.0, 0.0])
    got = w.rate(end)
    assert got is not None and got.tok_s == 0 and got.unsure is None


def test_slots_rate_times_each_read_at_the_middle_of_its_round_trip():
    prev = SlotRead(10.0, {0: (7, 100)}, rtt_s=0.02)
    cur = SlotRead(11.0, {0: (7, 130)}, rtt_s=0.30)
    r = slots_rate(prev, cur)
    assert r.tok_s == pytest.approx(30.0) and r.timing_s == pytest.approx(0.16)
