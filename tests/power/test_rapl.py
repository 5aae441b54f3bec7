import os

from precmon.power.rapl import PERMISSION_REASON, open_rapl

PKG = "/sys/class/powercap/intel-rapl:0"
CORE = "/sys/class/powercap/intel-rapl:0:0"


def _rapl_tree(fakeroot, energy=1_000_000, max_range=262_143_328_850):
    fakeroot.files(PKG, name="package-0", energy_uj=energy, max_energy_range_uj=max_range)
    fakeroot.files(CORE, name="core", energy_uj=5, max_energy_range_uj=max_range)
    fakeroot.files("/sys/class/powercap/intel-rapl:1", name="psys", energy_uj=7)
    fakeroot.files("/sys/class/powercap/intel-rapl-mmio:0", name="package-0", energy_uj=9)


def test_zones_ids_and_scopes(fakeroot):
    _rapl_tree(fakeroot)
    src, missing = open_rapl()
    assert missing == []
    chans = {c.id: c.scope for c in src.channels()}
    assert chans == {"rapl:package-0": "package", "rapl:package-0:core": "cpu", "rapl:psys": "soc"}
    assert all(c.has_energy_counter for c in src.channels())


def test_advancing_and_wrapping_counter(fakeroot):
    _rapl_tree(fakeroot, energy=999_000_000, max_range=1_000_000_000)
    src, _ = open_rapl()
    s0 = {s.channel_id: s for s in src.read()}["rapl:package-0"]
    assert s0.energy_j == 999.0
    fakeroot.write(f"{PKG}/energy_uj", 4_000_000)  # wrapped: 1 J to the wrap + 4 J after it
    s1 = {s.channel_id: s for s in src.read()}["rapl:package-0"]
    assert s1.energy_j == 1004.0
    fakeroot.write(f"{PKG}/energy_uj", 10_000_000)
    s2 = {s.channel_id: s for s in src.read()}["rapl:package-0"]
    assert s2.energy_j == 1010.0


def test_permission_denied_is_a_plain_reason(fakeroot, monkeypatch):
    """We run as root, which ignores chmod 000; so the denial comes from a patched open()."""
    _rapl_tree(fakeroot)
    real_open = os.open

    def denying_open(path, flags):
        if str(path).endswith("energy_uj"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags)

    monkeypatch.setattr("precmon.power._sysfs._os_open", denying_open)
    src, missing = open_rapl()
    assert src is None
    assert {u.id for u in missing} == {"rapl:package-0", "rapl:package-0:core", "rapl:psys"}
    assert {u.reason for u in missing} == {PERMISSION_REASON}
    assert PERMISSION_REASON == "permission denied: RAPL needs root since kernel 5.10"


def test_no_powercap_at_all(fakeroot):
    src, missing = open_rapl()
    assert src is None
    assert missing[0].kind == "rapl" and missing[0].reason.startswith("no device: no intel-rapl zone")
