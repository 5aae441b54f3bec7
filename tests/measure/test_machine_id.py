"""`host.fingerprint.machine_id`: a salted hash of /etc/machine-id, else of the GPUs' NVML UUIDs,
stable across driver updates and never the raw id (docs/design.md §5)."""

from __future__ import annotations

import hashlib
import hmac

from precmon.measure.trust import fingerprint as fpmod
from precmon.measure.trust.fingerprint import MACHINE_ID_KEY, host_fingerprint
from tests.measure.test_fingerprint import CPUINFO_X86, FakeNvml, root, write  # noqa: F401 - root is a fixture

UUIDS = ("GPU-8d5b1a52-0000-1111-2222-333344445555", "GPU-1f00aa00-0000-1111-2222-333344445555")


class UuidNvml(FakeNvml):
    def __init__(self, uuids=UUIDS, **kw):
        super().__init__(gpus=("NVIDIA H200",) * len(uuids), **kw)
        self.uuids = list(uuids)

    def nvmlDeviceGetUUID(self, h):
        return self.uuids[h].encode()


def test_machine_id_is_a_salted_hash_of_the_machine_id_file(root, monkeypatch):  # noqa: F811
    write(root, "/etc/machine-id", "0123456789abcdef0123456789abcdef\n")
    monkeypatch.setattr(fpmod.socket, "gethostname", lambda: "vm")
    fp = host_fingerprint(None, nvml=UuidNvml())
    want = hmac.new(MACHINE_ID_KEY, b"0123456789abcdef0123456789abcdef", hashlib.sha256).hexdigest()[:16]
    assert (fp["machine_id"], fp["machine_id_from"]) == (want, "machine-id")
    assert want != hashlib.sha256(b"0123456789abcdef0123456789abcdef").hexdigest()[:16]  # salted
    assert "0123456789abcdef" not in str(fp) and "GPU-8d5b" not in str(fp)
    assert "machine_id" not in fp["reasons"]


def test_without_a_machine_id_file_the_gpu_uuids_make_it_in_any_order(root):  # noqa: F811
    fp = host_fingerprint(None, nvml=UuidNvml())
    assert fp["machine_id_from"] == "gpu-uuid" and len(fp["machine_id"]) == 16
    assert host_fingerprint(None, nvml=UuidNvml(uuids=UUIDS[::-1]))["machine_id"] == fp["machine_id"]
    assert host_fingerprint(None, nvml=UuidNvml(uuids=UUIDS[:1]))["machine_id"] != fp["machine_id"]
    assert not any("GPU-" in str(v) for v in fp.values())
    assert "machine_id" not in fp["reasons"]


def test_the_machine_id_survives_a_driver_update_and_a_rename(root, monkeypatch):  # noqa: F811
    write(root, "/proc/cpuinfo", CPUINFO_X86)
    write(root, "/etc/machine-id", "aaaa\n")
    before = host_fingerprint(None, nvml=UuidNvml())
    monkeypatch.setattr(fpmod.socket, "gethostname", lambda: "renamed")
    after = host_fingerprint(None, nvml=UuidNvml(fail={"driver"}))
    assert after["machine_id"] == before["machine_id"] and after["id"] != before["id"]


def test_nothing_to_hash_is_null_with_a_reason(root):  # noqa: F811
    fp = host_fingerprint(None, nvml=FakeNvml(init_error=True))
    assert fp["machine_id"] is None and fp["machine_id_from"] is None
    assert fp["reasons"]["machine_id"] == "no readable machine-id and no NVML GPU UUID"
