"""`precmon ladder`'s inputs (issue 39 #7): what it writes must not depend on where you stand,
and a bad input is exit 2 with one line, found before anything is quantized or built.

Before: relative `--server`, `--quantize` and model paths went into `launch` as written
(`./llama-server` became `llama-server`, i.e. PATH's), `--quantize ./llama-quantize` failed although
the file existed; duplicate rungs were written into a file `sweep --check` rejects; a BF16 file
named `*-F16` fed two rungs; a junk file at a rung's path was "kept"; `--port 65535` wrote port
65536; `--server-args` could override the port and model the sweep needs; input errors exited 1;
a full disk read as llama-quantize's "basic_ios::clear"."""

from __future__ import annotations

import os
import shutil
import struct
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from precmon.cli import main
from precmon.sweep.ladder import RUNGS, LadderError, quantize, rungs_from
from precmon.sweep.spec import load_spec

GGML = {"F16": 1, "BF16": 30, "Q8_0": 8, "Q4_0": 2, "Q4_K": 12, "Q6_K": 14, "NVFP4": 40, "MXFP4": 39}
FTYPE = {"F16": 1, "BF16": 32, "Q8_0": 7, "Q4_0": 2, "Q4_K_M": 15, "Q6_K": 18, "NVFP4": 39}


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(path: Path, tensor_type: str, file_type: str | None) -> Path:
    """A GGUF header: one 64×64 tensor of `tensor_type`, `general.file_type` = `file_type`."""
    kvs = b"" if file_type is None else _s("general.file_type") + struct.pack("<II", 4, FTYPE[file_type])
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0 if file_type is None else 1) + kvs
    path.write_bytes(head + _s("blk.0.attn_q.weight") + struct.pack("<IQQIQ", 2, 64, 64, GGML[tensor_type], 0))
    return path


FAKE_QUANTIZE = """#!{python}
import struct, sys
sys.path.insert(0, {tests!r})
from test_ladder_inputs import gguf
from pathlib import Path
args = sys.argv[1:]
src, dst, base = args[-3:]
fp4 = [a.split("=")[1].upper() for a in args if "=nvfp4" in a or "=mxfp4" in a]
ftype = {{"Q4_K_M": "Q4_K_M", "Q8_0": "Q8_0", "Q4_0": "Q4_0", "Q6_K": "Q6_K", "BF16": "BF16", "F16": "F16"}}[base]
if "general.file_type=int:39" in args:
    ftype = "NVFP4"
tensor = fp4[0] if fp4 else {{"Q4_K_M": "Q4_K", "Q8_0": "Q8_0", "Q4_0": "Q4_0", "Q6_K": "Q6_K"}}.get(base, base)
gguf(Path(dst), tensor, ftype)
"""


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder with a wide model and tools, as the current folder."""
    monkeypatch.chdir(tmp_path)
    gguf(tmp_path / "m-F16.gguf", "F16", "F16")
    q = tmp_path / "llama-quantize"
    q.write_text(FAKE_QUANTIZE.format(python=sys.executable, tests=str(Path(__file__).parent)))
    q.chmod(0o755)
    s = tmp_path / "llama-server"
    s.write_text("#!/bin/sh\nexit 0\n")
    s.chmod(0o755)
    return tmp_path


def ladder(*extra: str) -> int:
    return main(["ladder", "m-F16.gguf", "--quantize", "./llama-quantize", "--server", "./llama-server", *extra])


def test_relative_paths_become_absolute_in_what_it_writes(here, capsys):
    assert ladder("--out", "out", "--rungs", "Q8_0,NVFP4,MXFP4") == 0, capsys.readouterr().err
    spec = load_spec(here / "out" / "ladder.toml")
    for v in spec.variants:
        assert v.launch is not None
        assert v.launch[0] == str(here / "llama-server")
        model = Path(v.launch[v.launch.index("-m") + 1])
        assert model.is_absolute() and model.is_file()
        assert Path(v.launch[v.launch.index("--slot-save-path") + 1]) == here / "out" / "slots"
    assert [v.label for v in spec.variants] == ["F16", "Q8_0", "NVFP4", "MXFP4"]
    assert ladder("--out", "out", "--rungs", "Q8_0,NVFP4,MXFP4") == 0  # run again: the rungs' headers fit, kept
    assert capsys.readouterr().out.count("(kept)") == 3


def expect_usage(capsys, *extra: str) -> str:
    assert ladder(*extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("precmon: "), err
    assert not list(Path().glob("*.gguf.part")) and not Path("ladder.toml").exists()
    return err[0]


def test_a_rung_given_twice_is_refused(here, capsys):
    assert "Q8_0 given twice" in expect_usage(capsys, "--rungs", "Q8_0,q8_0")
    with pytest.raises(LadderError, match="given twice"):
        rungs_from("NVFP4,Q4_0,nvfp4")


def test_input_errors_exit_2(here, capsys):
    assert "unknown rung 'Q3'" in expect_usage(capsys, "--rungs", "Q3")
    assert "--server-args" in expect_usage(capsys, "--server-args", "-c '8192")
    assert f"--server {here / 'nothing-here'}: no such file" in expect_usage(capsys, "--server", "./nothing-here")


@pytest.mark.parametrize(
    ("args", "flag"),
    [("--port 9000", "--port"), ("-m other.gguf", "-m"), ("--model=x.gguf", "--model"), ("--host 0.0.0.0", "--host"),
     ("-c 4096 --cache-ram 2048", "--cache-ram")],
)  # fmt: skip
def test_server_args_that_clash_with_what_the_sweep_needs(here, capsys, args, flag):
    line = expect_usage(capsys, f"--server-args={args}")
    assert f"--server-args: {flag}" in line and "the sweep sets it" in line


def test_ports_past_65535_are_refused(here, capsys):
    line = expect_usage(capsys, "--port", "65534", "--rungs", "Q8_0,Q4_0")
    assert "--port 65534" in line and "3 servers" in line and "65536" in line


def test_a_bf16_file_named_f16_does_not_feed_two_rungs(here, capsys):
    gguf(here / "m-F16.gguf", "BF16", "BF16")
    line = expect_usage(capsys, "--rungs", "F16,Q8_0")
    assert "m-F16.gguf" in line and "is the input itself" in line and "BF16" in line


@pytest.mark.parametrize(("content", "why"), [(b"junk", "not a GGUF"), (None, "holds Q4_0, not Q8_0")])
def test_a_file_already_at_a_rungs_path_is_checked(here, capsys, content, why):
    dst = here / "m-Q8_0.gguf"
    if content is None:
        gguf(dst, "Q4_0", "Q4_0")
    else:
        dst.write_bytes(content)
    line = expect_usage(capsys, "--rungs", "Q8_0")
    assert str(dst) in line and why in line and "remove it, or choose another --out" in line


def test_a_full_disk_is_said_as_such(tmp_path, monkeypatch):
    tool = tmp_path / "q"
    tool.write_text(
        "#!/bin/sh\necho 'llama_model_quantize: failed to quantize: basic_ios::clear: iostream error'\nexit 1\n"
    )
    tool.chmod(0o755)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 4096, 4096))
    with pytest.raises(LadderError) as exc:
        quantize(tool, tmp_path / "w.gguf", tmp_path / "w-Q8_0.gguf", RUNGS["Q8_0"])
    assert str(exc.value).startswith(f"no space left in {tmp_path} (4 KiB free) for Q8_0: ")
    assert "basic_ios::clear" in str(exc.value)


def test_a_bare_tool_name_is_what_path_finds(here, monkeypatch, capsys):
    monkeypatch.setenv("PATH", f"{here}{os.pathsep}{os.environ['PATH']}")
    assert (
        main(["ladder", "m-F16.gguf", "--quantize", "llama-quantize", "--server", "llama-server", "--rungs", "Q8_0"])
        == 0
    )
    (v0, v1) = load_spec(here / "ladder.toml").variants
    assert v0.launch is not None and v0.launch[0] == str(here / "llama-server")
    capsys.readouterr()
    (here / "ladder.toml").unlink()
    line = expect_usage(capsys, "--server", "no-such-server-anywhere")
    assert "--server no-such-server-anywhere: not found on PATH" in line
