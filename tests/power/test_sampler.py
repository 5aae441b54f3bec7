"""The sampler against fake sources whose power is known exactly (a function of time)."""

import time

import pytest

from precmon.power.base import Channel, Sample
from precmon.power.sampler import PowerSampler

# wall-clock figures against a known truth at a tight tolerance: .ci/run's Python 3.12 pass runs
# these in one process, after its two-worker pass (another worker's load would move them)
pytestmark = pytest.mark.timing


class StepSource:
    """Draws `low` watts until `switch_at` (monotonic), `high` after; optional exact counter."""

    def __init__(self, cid="fake:0", scope="gpu", low=100.0, high=300.0, counter=True, read_delay_s=0.0):
        self.kind = "fake"
        self.blocking = read_delay_s > 0
        self.cid, self.scope, self.low, self.high, self.counter = cid, scope, low, high, counter
        self.read_delay_s = read_delay_s
        self.t0 = time.monotonic()
        self.switch_at = float("inf")
        self.reads = 0

    def power(self, t):
        return self.high if t >= self.switch_at else self.low

    def energy(self, t):
        if t < self.switch_at:
            return self.low * (t - self.t0)
        return self.low * (self.switch_at - self.t0) + self.high * (t - self.switch_at)

    def channels(self):
        return [Channel(self.cid, "fake", "fake", self.scope, has_energy_counter=self.counter)]

    def read(self, full=True):
        self.reads += 1
        if self.read_delay_s:
            time.sleep(self.read_delay_s)
        t = time.monotonic()
        return [Sample(self.cid, t, self.power(t), self.energy(t) if self.counter else None)]

    def close(self):
        pass


@pytest.mark.parametrize("counter", [True, False])
def test_constant_power_window(counter):
    src = StepSource(low=250.0, counter=counter)
    with PowerSampler([src], rate_hz=20) as sampler:
        sampler.begin("decode")
        time.sleep(0.6)
        (w,) = sampler.end("decode")
    assert w.method == ("counter" if counter else "integrated")
    assert w.avg_watts == pytest.approx(250.0, rel=0.01)
    assert w.energy_j == pytest.approx(250.0 * w.duration_s, rel=0.01)
    assert w.duration_s == pytest.approx(0.6, abs=0.05)
    assert w.peak_watts == 250.0 and w.n_samples >= 10


def test_step_at_the_boundary_counter_vs_integrated():
    """Power steps up right at begin(): the boundary read makes both methods see it."""
    a, b = StepSource("a:0", counter=True), StepSource("b:0", counter=False)
    with PowerSampler([a, b], rate_hz=10) as sampler:
        time.sleep(0.15)
        a.switch_at = b.switch_at = time.monotonic()
        sampler.begin("prefill")
        time.sleep(0.5)
        wins = {w.channel_id: w for w in sampler.end("prefill")}
    assert wins["a:0"].method == "counter" and wins["b:0"].method == "integrated"
    assert wins["a:0"].avg_watts == pytest.approx(300.0, rel=0.03)
    assert wins["b:0"].avg_watts == pytest.approx(300.0, rel=0.03)


def test_history_latest_and_phases_overlap():
    src = StepSource(low=42.0)
    with PowerSampler([src], rate_hz=50) as sampler:
        sampler.begin("outer")
        time.sleep(0.2)
        sampler.begin("inner")
        time.sleep(0.2)
        inner = sampler.end("inner")
        outer = sampler.end("outer")
        hist = sampler.history("fake:0", 10)
        assert sampler.latest()["fake:0"].watts == 42.0
    assert inner[0].duration_s == pytest.approx(0.2, abs=0.05)
    assert outer[0].duration_s == pytest.approx(0.4, abs=0.05)
    assert len(hist) >= 15 and all(s.watts == 42.0 for s in hist)
    assert [s.t_s for s in hist] == sorted(s.t_s for s in hist)
    with pytest.raises(KeyError):
        sampler.end("never")


def test_slow_source_never_blocks_the_caller():
    slow, fast = StepSource("slow:0", read_delay_s=0.6), StepSource("fast:0", low=10.0)
    sampler = PowerSampler([slow, fast], rate_hz=10, boundary_timeout_s=0.1).start()
    try:
        time.sleep(0.7)  # the slow one has one sample by now
        t = time.monotonic()
        sampler.begin("decode")
        assert time.monotonic() - t < 0.2
        time.sleep(0.3)
        t = time.monotonic()
        wins = {w.channel_id: w for w in sampler.end("decode")}
        assert time.monotonic() - t < 0.2
    finally:
        sampler.stop()
    assert wins["fast:0"].avg_watts == pytest.approx(10.0, rel=0.01)
    assert "slow:0" in wins  # from the samples it had: late, but not lost


def test_idle_power_and_headline():
    gpu, system = StepSource("g:0", "gpu", low=80.0), StepSource("s:0", "system", low=120.0, counter=False)
    with PowerSampler([gpu, system], rate_hz=20) as sampler:
        wins = sampler.idle_power(0.3)
        info = sampler.power_sources_info()
    top = PowerSampler.headline(wins)
    assert (top.channel_id, top.phase) == ("s:0", "idle")
    assert top.avg_watts == pytest.approx(120.0, rel=0.01)
    assert [i["id"] for i in info] == ["s:0", "g:0"]
    assert info[1]["method"] == "counter"


def test_failing_source_does_not_kill_the_sampler():
    class Broken(StepSource):
        def read(self, full=True):
            raise RuntimeError("sensor fell off the bus")

    broken = Broken("x:0")
    broken.kind = "broken"
    with PowerSampler([broken, StepSource("ok:0")], rate_hz=20) as sampler:
        time.sleep(0.15)
        assert sampler.errors() == {"broken": "RuntimeError: sensor fell off the bus"}
        assert "ok:0" in sampler.latest()
    # this sampler's own threads (a TUI test run before may leave its daemon sampler behind)
    assert not any(w.is_alive() for w in sampler._workers)


def test_extras_are_read_at_their_own_rate():
    class Counting(StepSource):
        def __init__(self):
            super().__init__()
            self.full_reads = 0

        def read(self, full=True):
            self.full_reads += full
            return super().read(full)

    src = Counting()
    with PowerSampler([src], rate_hz=20, extras_hz=5):
        time.sleep(1.0)
    assert 18 <= src.reads <= 23
    assert 4 <= src.full_reads <= 6


def test_expensive_counter_is_read_at_boundaries_only():
    """NVML's energy call costs ~4 ms of CPU: ticks skip it, begin/end read it."""

    class Costly(StepSource):
        expensive_counter = True

        def __init__(self):
            super().__init__(low=200.0)
            self.counter_reads = 0

        def read(self, full=True, counters=True):
            self.counter_reads += counters
            (s,) = super().read(full)
            return [s if counters else Sample(s.channel_id, s.t_s, s.watts, None)]

    src = Costly()
    with PowerSampler([src], rate_hz=20) as sampler:
        time.sleep(0.3)
        sampler.begin("decode")
        time.sleep(0.5)
        (w,) = sampler.end("decode")
    assert w.method == "counter" and w.avg_watts == pytest.approx(200.0, rel=0.01)
    assert src.reads >= 15 and src.counter_reads <= 4  # first tick, begin, end (+1 periodic at most)


def test_a_costly_counter_can_be_left_to_the_boundaries_alone():
    """The TUI shows nothing between phase boundaries that needs the counter: `counter_period_s=None`
    reads it only at begin/end (and a lap), never periodically."""

    class Costly(StepSource):
        expensive_counter = True

        def __init__(self):
            super().__init__(low=200.0)
            self.counter_reads = 0

        def read(self, full=True, counters=True):
            self.counter_reads += counters
            (s,) = super().read(full)
            return [s if counters else Sample(s.channel_id, s.t_s, s.watts, None)]

    src = Costly()
    with PowerSampler([src], rate_hz=20, counter_period_s=None) as sampler:
        time.sleep(0.3)
        assert src.counter_reads == 0
        sampler.begin("watch")
        time.sleep(0.3)
        (w,) = sampler.lap("watch")
        time.sleep(0.3)
        sampler.end("watch")
    assert w.method == "counter" and w.avg_watts == pytest.approx(200.0, rel=0.01)
    assert src.counter_reads == 3 and src.reads >= 12


def test_set_rates_slows_and_speeds_the_reads_at_once():
    """The TUI idles the sampler at 1 Hz and gives a measurement the full rate back: the new
    period counts from the next read, so a switch never waits out the old (long) period."""
    src = StepSource()
    with PowerSampler([src], rate_hz=20.0, extras_hz=2.0) as sampler:
        time.sleep(0.3)
        sampler.set_rates(1.0, 0.5)
        assert (sampler.rate_hz, sampler.extras_hz) == (1.0, 0.5)  # what a results fingerprint records
        before = src.reads
        time.sleep(2.0)
        slow = src.reads - before  # the read at the switch, then one a second
        sampler.set_rates(20.0, 2.0)
        before = src.reads
        time.sleep(1.0)
        fast = src.reads - before
    assert 1 <= slow <= 4
    assert fast >= 8  # about 20; a busy CI box loses some, never down to the idle rate


@pytest.mark.parametrize("counter", [True, False])
def test_lap_closes_one_window_and_opens_the_next_at_one_boundary_read(counter):
    """Watch mode's J/token each poll: back-to-back windows, one boundary read between them, and
    the energy of the two laps is the energy of the whole span (nothing lost or counted twice)."""
    src = StepSource(low=200.0, counter=counter)
    with PowerSampler([src], rate_hz=20) as sampler:
        sampler.begin("watch")
        time.sleep(0.4)
        (first,) = sampler.lap("watch")
        src.switch_at = time.monotonic()
        time.sleep(0.4)
        (second,) = sampler.lap("watch")
        sampler.end("watch")
    assert first.avg_watts == pytest.approx(200.0, rel=0.02)
    assert second.avg_watts == pytest.approx(300.0, rel=0.05)
    assert first.duration_s == pytest.approx(0.4, abs=0.05) and second.duration_s == pytest.approx(0.4, abs=0.05)
    with pytest.raises(KeyError):
        sampler.lap("never-begun")
    slow = StepSource()
    with PowerSampler([slow], rate_hz=0.2) as sampler:  # no periodic read during the test
        sampler.begin("watch")
        reads = slow.reads
        sampler.lap("watch")
        assert slow.reads - reads == 1  # end + begin at one read, not two
