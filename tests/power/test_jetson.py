import os

import pytest

from precmon.power import jetson
from precmon.power.jetson import open_jetson, parse_tegrastats_line

I2C = "/sys/bus/i2c/devices/1-0040/hwmon/hwmon3"

ORIN = (
    "12-01-2024 10:00:00 RAM 2185/7765MB (lfb 1x4MB) SWAP 0/3882MB (cached 0MB) CPU [2%@1190,off] "
    "EMC_FREQ 0% GR3D_FREQ 0% cpu@45.5C VDD_IN 4162mW/4100mW VDD_CPU_GPU_CV 641mW/630mW "
    "VDD_SOC 1441mW/1400mW"
)
NANO = "RAM 1573/3964MB (lfb 1x4MB) IRAM 0/252kB(lfb 252kB) CPU [7%@102] POM_5V_IN 1388/1388 POM_5V_GPU 0/0"


def test_tegrastats_parser_orin_and_older():
    assert parse_tegrastats_line(ORIN) == {
        "VDD_IN": (4.162, 4.1),
        "VDD_CPU_GPU_CV": (0.641, 0.63),
        "VDD_SOC": (1.441, 1.4),
    }
    assert parse_tegrastats_line(NANO) == {"POM_5V_IN": (1.388, 1.388), "POM_5V_GPU": (0.0, 0.0)}
    assert parse_tegrastats_line("RAM 2185/7765MB SWAP 0/3882MB") == {}


def _ina_tree(fakeroot):
    fakeroot.files(
        I2C,
        name="ina3221",
        in1_label="VDD_IN",
        in1_input=5048,
        curr1_input=820,
        in2_label="VDD_CPU_GPU_CV",
        in2_input=5040,
        curr2_input=120,
        in3_label="VDD_SOC",
        in3_input=5032,
        curr3_input=280,
        in7_label="sum of shunt voltages",
        in7_input=90,
    )


def test_ina3221_rails(fakeroot):
    _ina_tree(fakeroot)
    (src,), missing = open_jetson()
    assert [(c.id, c.scope) for c in src.channels()] == [
        ("jetson:VDD_IN", "module"),
        ("jetson:VDD_CPU_GPU_CV", "rail"),
        ("jetson:VDD_SOC", "rail"),
    ]
    samples = {s.channel_id: s.watts for s in src.read()}
    assert samples == pytest.approx(
        {"jetson:VDD_IN": 4.13936, "jetson:VDD_CPU_GPU_CV": 0.6048, "jetson:VDD_SOC": 1.40896}
    )
    assert [u.kind for u in missing] == ["tegrastats"]


def test_ina3221_denied_falls_back_to_tegrastats_or_says_why(fakeroot, monkeypatch):
    _ina_tree(fakeroot)
    real_open = os.open

    def denying_open(path, flags):
        if "/hwmon3/in" in str(path) or "/hwmon3/curr" in str(path):
            if not str(path).endswith("_label"):
                raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags)

    monkeypatch.setattr("precmon.power._sysfs._os_open", denying_open)
    monkeypatch.setattr(jetson.shutil, "which", lambda name: None)
    sources, missing = open_jetson()
    assert sources == []
    assert [(u.kind, u.reason) for u in missing] == [
        ("jetson", "permission denied: INA3221 rails not readable"),
        ("tegrastats", "no device: tegrastats not on PATH"),
    ]


def test_tegrastats_fallback_runs_the_binary(fakeroot, tmp_path, monkeypatch):
    fake = tmp_path / "tegrastats"
    fake.write_text(f"#!/bin/sh\nwhile true; do echo '{ORIN}'; sleep 0.05; done\n")
    fake.chmod(0o755)
    monkeypatch.setattr(jetson.shutil, "which", lambda name: str(fake))
    (src,), missing = open_jetson()
    try:
        assert src.kind == "tegrastats"
        assert [(c.id, c.scope) for c in src.channels()] == [
            ("tegrastats:VDD_IN", "module"),
            ("tegrastats:VDD_CPU_GPU_CV", "rail"),
            ("tegrastats:VDD_SOC", "rail"),
        ]
        assert {s.channel_id: s.watts for s in src.read()}["tegrastats:VDD_IN"] == 4.162
        assert missing[0].reason.startswith("no device: no INA3221 rails")
    finally:
        src.close()
