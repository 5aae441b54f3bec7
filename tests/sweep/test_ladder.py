"""`precmon ladder`: one F16 GGUF → the precision ladder and a sweep file that measures it
(design §8 "Ladder")."""

from __future__ import annotations

import struct

import pytest

from precmon.cli import main
from precmon.servers.gguf_weights import read_weights
from precmon.sweep.ladder import RUNGS, LadderError, LadderFile, check_wide, rungs_from, split_args, sweep_toml
from precmon.sweep.spec import load_spec


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _gguf(path, tid: int):
    out = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + _s("blk.0.attn_q.weight") + struct.pack("<IQQIQ", 2, 64, 64, tid, 0)
    path.write_bytes(out)
    return path


def test_rungs_are_named_and_unknown_ones_listed():
    assert [r.label for r in rungs_from("q8_0, NVFP4")] == ["Q8_0", "NVFP4"]
    with pytest.raises(LadderError, match=r"unknown rung 'Q3'.*known: F16, BF16, Q8_0"):
        rungs_from("Q8_0,Q3")
    with pytest.raises(LadderError, match="at least one"):
        rungs_from(" , ")
    assert RUNGS["NVFP4"].options()[-1] == "general.file_type=int:39" and RUNGS["MXFP4"].base_type == "Q8_0"


def test_only_a_wide_file_is_laddered(tmp_path):
    assert check_wide(_gguf(tmp_path / "w.gguf", 1)) == "F16"
    with pytest.raises(LadderError, match="its weights are Q4_0, not F16/BF16: quantizing it would round twice"):
        check_wide(_gguf(tmp_path / "q.gguf", 2))
    (tmp_path / "t.gguf").write_text("hello")
    with pytest.raises(LadderError, match="t.gguf"):
        check_wide(tmp_path / "t.gguf")


def test_the_sweep_file_launches_each_rung_and_scores_quality(tmp_path):
    """Paths with quotes, backslashes and spaces survive the TOML; the wide file is the baseline."""
    odd = tmp_path / 'my "models" \\ dir'
    files = [LadderFile(RUNGS["F16"], odd / "m-F16.gguf", None), LadderFile(RUNGS["NVFP4"], odd / "m-NVFP4.gguf", 1.0)]
    spec_path = tmp_path / "ladder.toml"
    spec_path.write_text(sweep_toml(files, "/opt/llama server", 18300, split_args("-ngl 99 -c '8192'")))
    spec = load_spec(spec_path)
    assert spec.baseline_label == "F16" and [v.label for v in spec.variants] == ["F16", "NVFP4"]
    nv = spec.variants[1]
    assert nv.precision == "nvfp4" and nv.quality is not None and nv.url == "http://127.0.0.1:18301"
    assert nv.launch[:3] == ["/opt/llama server", "-m", str(odd / "m-NVFP4.gguf")]
    assert nv.launch[-4:] == ["-ngl", "99", "-c", "8192"]
    with pytest.raises(LadderError, match="--server-args"):
        split_args("-c '8192")


def test_the_command_says_what_is_missing_in_one_line(tmp_path, capsys):
    assert main(["ladder", str(tmp_path / "none.gguf")]) == 2
    assert "none.gguf: no such GGUF file" in capsys.readouterr().err
    wide = _gguf(tmp_path / "w.gguf", 1)
    code = main(["ladder", str(wide), "--quantize", str(tmp_path / "no-quantize"), "--server", "llama-server"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"precmon: --quantize {tmp_path / 'no-quantize'}: no such file"]
    broken = tmp_path / "broken-quantize"
    broken.write_text("#!/bin/sh\necho 'llama_model_quantize: failed to quantize' >&2\nexit 3\n")
    broken.chmod(0o755)
    server = tmp_path / "llama-server"  # a bare name PATH lacks is an input error now (test_ladder_inputs.py)
    server.write_text("#!/bin/sh\n")
    assert main(["ladder", str(wide), "--quantize", str(broken), "--server", str(server), "--rungs", "Q8_0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "precmon: broken-quantize Q8_0 failed (exit 3): llama_model_quantize: failed to quantize"
    assert not list(tmp_path.glob("*.part")) and not (tmp_path / "ladder.toml").exists()


@pytest.mark.integration
def test_precmon_ladder_makes_nvfp4_and_a_q4_k_m_from_the_real_f16(real_ladder, llama_build, tmp_path, capsys):
    out = tmp_path / "ladder"
    quantize = llama_build.tool("llama-quantize")
    argv = [
        "ladder",
        str(real_ladder["F16"]),
        "--out",
        str(out),
        "--rungs",
        "Q4_K_M,NVFP4",
        "--quantize",
        str(quantize),
    ]
    assert main([*argv, "--server", str(llama_build.tool("llama-server"))]) == 0
    printed = capsys.readouterr().out
    assert "sweep file:" in printed and "next: precmon sweep" in printed
    km, nv = read_weights(out / "smollm2-Q4_K_M.gguf"), read_weights(out / "smollm2-NVFP4.gguf")
    assert (km.file_type, km.main_type) == ("Q4_K_M", "Q5_0")  # SmolLM2's width: the fallback
    assert (nv.file_type, nv.main_type) == ("NVFP4", "NVFP4")
    spec = load_spec(out / "ladder.toml")
    assert [v.label for v in spec.variants] == ["F16", "Q4_K_M", "NVFP4"]
    assert spec.variants[0].launch[2] == str(real_ladder["F16"])
    server = str(llama_build.tool("llama-server"))
    assert main([*argv, "--server", server]) == 0 and "(kept)" in capsys.readouterr().out  # idempotent


def test_each_rung_is_launched_as_precmon_measures_best_unless_the_user_says_otherwise(tmp_path):
    """Every layer on the GPU, the KV cache's size in the log (-lv 4: sweep/kv_memory.py), slots
    precmon may erase (--slot-save-path: measure/depth/slots.py); a flag the user gives wins."""
    from precmon.sweep.ladder import launch_flags

    slots = tmp_path / "slots"
    assert launch_flags([], slots, gpu_layers=True) == ["-ngl", "99", "-lv", "4", "--slot-save-path", str(slots)]
    assert launch_flags([], slots, gpu_layers=False) == ["-lv", "4", "--slot-save-path", str(slots)]
    mine = ["--n-gpu-layers", "20", "--verbosity=5", "--slot-save-path", "/s", "-c", "8192"]
    assert launch_flags(mine, slots, gpu_layers=True) == mine
    files = [LadderFile(RUNGS["F16"], tmp_path / "m-F16.gguf", None)]
    (tmp_path / "ladder.toml").write_text(sweep_toml(files, "llama-server", 18300, ["-c", "8192"], slots, True))
    launch = load_spec(tmp_path / "ladder.toml").variants[0].launch
    assert launch[-8:] == ["-ngl", "99", "-lv", "4", "--slot-save-path", str(slots), "-c", "8192"]


def test_a_model_in_one_precision_only_gets_the_recipe_instead_of_a_ladder(tmp_path, capsys):
    """gpt-oss ships in MXFP4 only: no wider file, so bench it alone or against another engine's
    or file's variant with compare; said before any tool is looked for or built (exit 2)."""
    mxfp4 = _gguf(tmp_path / "gpt-oss-MXFP4.gguf", 39)
    assert main(["ladder", str(mxfp4)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"precmon: {mxfp4}: its weights are MXFP4, not F16/BF16: quantizing it would round twice; "
        "give the F16 or BF16 GGUF (convert_hf_to_gguf.py --outtype f16)"
    )
    assert err[1].startswith("precmon ladder: a model that ships in MXFP4 only (gpt-oss is MXFP4 only)")
    assert any(f"llama-server -m {mxfp4} -ngl 99" in line for line in err)
    assert any("precmon bench --url http://127.0.0.1:8080 --json mxfp4.json" in line for line in err)
    assert err[-1].endswith("precmon compare mxfp4.json other.json")
