from precmon.power._sysfs import CounterRate, CounterUnwrapper, counter_delta, read_meminfo
from precmon.power.energy import joules_per_token


def test_counter_delta_plain_wrap_and_reset():
    assert counter_delta(1_000, 4_500, 10_000) == 3_500
    assert counter_delta(9_000, 500, 10_000) == 1_500  # one wrap at max_energy_range_uj
    assert counter_delta(9_000, 500, None) == 500  # no known range: a reset to zero


def test_unwrapper_is_monotonic_across_a_wrap():
    u = CounterUnwrapper(max_range=262_143_328_850)
    assert u.update(262_143_000_000) == 262_143_000_000
    assert u.update(262_143_328_000) == 262_143_328_000
    assert u.update(1_150) == 262_143_330_000  # 850 to the wrap + 1 150 after it
    assert u.update(2_150) == 262_143_331_000


def test_counter_rate_ignores_too_close_reads():
    r = CounterRate(min_dt_s=0.05)
    assert r.update(10.0, 100.0) is None
    assert r.update(10.5, 110.0) == 20.0
    assert r.update(10.51, 111.0) == 20.0  # 10 ms later: keep the last rate
    assert r.update(11.5, 140.0) == 30.0


def test_meminfo_in_bytes(fakeroot):
    fakeroot.write("/proc/meminfo", "MemTotal:  131072000 kB\nMemFree: 1000 kB\nMemAvailable: 100000000 kB")
    info = read_meminfo()
    assert info["MemTotal"] == 134_217_728_000
    assert info["MemAvailable"] == 102_400_000_000


def test_joules_per_token():
    assert joules_per_token(10.5, 255) == 10.5 / 255
    assert joules_per_token(None, 255) is None
    assert joules_per_token(10.0, 0) is None
