import os

from precmon.power.hwmon import open_hwmon

HW = "/sys/class/hwmon"


def _by_kind(sources):
    return {s.kind: s for s in sources}


def test_amdgpu_discrete_prefers_instant_and_keeps_both(fakeroot):
    fakeroot.files(
        f"{HW}/hwmon2",
        name="amdgpu",
        power1_average=181_000_000,
        power1_input=203_500_000,
        in0_label="vddgfx",
        temp2_label="junction",
    )
    sources, missing = open_hwmon()
    src = _by_kind(sources)["amdgpu"]
    (ch,) = src.channels()
    assert (ch.id, ch.kind, ch.scope, ch.note) == ("hwmon2:amdgpu", "amdgpu", "gpu", "")
    (s,) = src.read()
    assert s.watts == 203.5
    assert s.extra == {"power_input_w": 203.5, "power_average_w": 181.0}
    assert {u.kind for u in missing} == {"spbm", "hwmon"}


def test_amdgpu_apu_is_package_scope_and_says_it_includes_the_cpu(fakeroot):
    # Strix Halo: only power1_average, and a vddnb rail that discrete GPUs lack
    fakeroot.files(f"{HW}/hwmon4", name="amdgpu", power1_average=62_000_000, in0_label="vddgfx", in1_label="vddnb")
    (src,), _ = open_hwmon()
    (ch,) = src.channels()
    assert (ch.scope, ch.note) == ("package", "APU: includes the CPU")
    assert src.read()[0].watts == 62.0


def test_amdgpu_half_populated_and_unreadable_reading(fakeroot, monkeypatch):
    # a device directory with a name but no power files is no power source
    fakeroot.files(f"{HW}/hwmon0", name="amdgpu", temp1_input=40000)
    fakeroot.files(f"{HW}/hwmon1", name="amdgpu", power1_input=50_000_000)
    sources, missing = open_hwmon()
    assert [s.path.name for s in sources] == ["hwmon1"]
    # a sleeping GPU answers ENODATA: one missing reading, not an exception
    real_open = os.open

    def enodata(path, flags):
        if str(path).endswith("power1_input"):
            raise OSError(61, "No data available")
        return real_open(path, flags)

    monkeypatch.setattr("precmon.power._sysfs._os_open", enodata)
    (s,) = sources[0].read()
    assert s.watts is None


def test_spbm_channels_scopes_and_energy_counters(fakeroot):
    fakeroot.files(
        f"{HW}/hwmon3",
        name="spbm",
        power1_label="sys_total",
        power1_input=38_200_000,
        power2_label="soc_pkg",
        power2_input=21_000_000,
        power3_label="cpu_gpu",
        power3_input=15_500_000,
        power4_label="gpu",
        power4_input=9_250_000,
        power5_label="dla",
        power5_input=0,
        energy1_label="sys_total",
        energy1_input=5_000_000_000,
        energy2_label="gpu",
        energy2_input=1_000_000,
    )
    (src,), missing = open_hwmon()
    chans = {c.id: (c.scope, c.has_energy_counter) for c in src.channels()}
    assert chans == {
        "hwmon3:sys_total": ("system", True),
        "hwmon3:soc_pkg": ("soc", False),
        "hwmon3:cpu_gpu": ("module", False),
        "hwmon3:gpu": ("gpu", True),
        "hwmon3:dla": ("rail", False),
    }
    samples = {s.channel_id: s for s in src.read()}
    assert samples["hwmon3:sys_total"].watts == 38.2
    assert samples["hwmon3:sys_total"].energy_j == 5000.0
    assert samples["hwmon3:gpu"].energy_j == 1.0
    assert samples["hwmon3:soc_pkg"].energy_j is None
    fakeroot.write(f"{HW}/hwmon3/energy1_input", 5_038_200_000)
    assert {s.channel_id: s for s in src.read()}["hwmon3:sys_total"].energy_j == 5038.2


def test_other_hwmon_power_and_ina3221_left_to_jetson(fakeroot):
    fakeroot.files(f"{HW}/hwmon5", name="power_meter", power1_average=312_000_000)
    fakeroot.files(f"{HW}/hwmon6", name="some_vrm", power1_input=7_500_000, power1_label="VCORE")
    fakeroot.files(f"{HW}/hwmon7", name="ina3221", in1_label="VDD_IN", in1_input=5000, curr1_input=800)
    fakeroot.files(f"{HW}/hwmon8", name="k10temp", temp1_input=45000)
    sources, missing = open_hwmon()
    chans = {c.id: (c.label, c.scope) for s in sources for c in s.channels()}
    assert chans == {
        "hwmon5:power_meter:power1": ("power_meter power1", "system"),
        "hwmon6:some_vrm:power1": ("VCORE", "rail"),
    }
    assert {u.kind for u in missing} == {"amdgpu", "spbm"}


def test_no_hwmon_class(fakeroot):
    sources, missing = open_hwmon()
    assert sources == []
    assert [u.kind for u in missing] == ["amdgpu", "spbm", "hwmon"]
    assert all("absent" in u.reason for u in missing)


def test_impossible_readings_are_no_reading(fakeroot):
    # hwmon power is unsigned µW (kernel hwmon sysfs ABI); a negative or absurd value from a buggy
    # driver or a corrupt file was taken as watts (-5.0 W, 1e17 W) and averaged into the phases
    fakeroot.files(f"{HW}/hwmon1", name="amdgpu", power1_input=-5_000_000)
    fakeroot.files(f"{HW}/hwmon2", name="power_meter", power1_average=99_999_999_999_999_999_999_999)
    fakeroot.files(f"{HW}/hwmon3", name="some_vrm", power1_input=7_500_000)
    sources, _ = open_hwmon()
    watts = {s.channel_id: s.watts for src in sources for s in src.read()}
    assert watts == {"hwmon1:amdgpu": None, "hwmon2:power_meter:power1": None, "hwmon3:some_vrm:power1": 7.5}
