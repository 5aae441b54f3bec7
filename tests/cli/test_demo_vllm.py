"""`precmon demo --engine vllm`: its sweep, its errors, and the whole command against a fake vLLM venv.

The real vLLM demo takes minutes (docs/results/vllm-cpu/ holds one run); here the cache holds a
fake vLLM venv whose `bin/python` serves the vLLM wire fake (tests/cli/fake_vllm.py), so the
command's whole path runs in seconds: cached install and models found, sweep file written into
--out, one launched server per precision, results.json, Ctrl-C, no process left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from precmon.cli import main
from precmon.cli.commands import demo_vllm
from precmon.sweep.spec import load_spec
from precmon.testbed import vllm_model
from precmon.testbed.cpu_flags import cpu_flags
from precmon.testbed.vllm_env import VllmEnv, check_host, env_for
from tests.conftest import require
from tests.tui.test_tmux import _screen, _tmux, _wait

ROOT = Path(__file__).resolve().parents[2]
FAKE = Path(__file__).with_name("fake_vllm.py")


def fake_cache(cache: Path) -> VllmEnv:
    """A precmon cache holding a 'complete' vLLM venv (its python: the fake server) and models."""
    env = VllmEnv(cache / env_for().root.name)
    env.python.parent.mkdir(parents=True)
    env.python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    env.python.chmod(0o755)
    env.marker.write_text("fake\n")
    models = cache / "vllm-models" / vllm_model.models_root().name
    for name in vllm_model.VARIANTS:
        (models / name).mkdir(parents=True)
        (models / name / "model.safetensors").write_bytes(b"")
    (models / vllm_model.MARKER).write_text("fake\n")
    return env


def test_demo_spec_is_the_four_precisions_one_launch_each(tmp_path):
    env = VllmEnv(tmp_path / "venv")
    models = {name: tmp_path / "m" / name for name in vllm_model.VARIANTS}
    spec = demo_vllm.demo_spec(env, models, tmp_path / "out")
    assert [v.label for v in spec.variants] == ["bf16", "W8A8 int8", "int4 RTN (AWQ)", "bf16 + fp8 KV"]
    assert [v.precision for v in spec.variants] == ["bf16", "int8", "int4", "bf16/fp8-kv"]
    assert all(v.strategy == "launch" for v in spec.variants)
    served = [v.launch[v.launch.index("--served-model-name") + 1] for v in spec.variants]
    assert served == ["smollm2-bf16", "smollm2-w8a8-int8", "smollm2-awq-int4", "smollm2-bf16"]
    assert spec.variants[-1].launch[-2:] == ["--kv-cache-dtype", "fp8"]
    assert not any("--enforce-eager" in v.launch for v in spec.variants)
    s = spec.settings
    assert (s.output_tokens, s.prefill_tokens, s.ttft_tokens, s.repeats) == (128, [512, 1024], 1024, 3)
    # the real model: quality against bf16 on every variant (its answer comes with it), with the
    # adaptive top-K's 1,000 tokens a position allowed by every server
    assert spec.baseline_label == "bf16" and all(v.quality is not None for v in spec.variants)
    assert all(v.quality.positions == 255 for v in spec.variants if v.quality is not None)  # one window
    assert all(v.launch[v.launch.index("--max-logprobs") + 1] == "1000" for v in spec.variants)
    # the file in --out is the same sweep, for `precmon sweep` to run again
    again = load_spec(tmp_path / "out" / demo_vllm.SWEEP_FILE)
    assert [v.launch for v in again.variants] == [v.launch for v in spec.variants]


def test_an_avx2_cpu_leaves_out_what_vllm_cannot_run_there(tmp_path):
    models = {name: tmp_path / "m" / name for name in vllm_model.VARIANTS}
    avx2 = frozenset("sse2 avx avx2 fma f16c".split())
    spec = demo_vllm.demo_spec(VllmEnv(tmp_path / "venv"), models, tmp_path / "out", flags=avx2)
    assert [v.label for v in spec.variants] == ["bf16", "W8A8 int8"]  # no int4 GEMM, no fp8 KV on _C_AVX2
    avx512 = avx2 | {"avx512f", "avx512bw", "avx512dq", "avx512vl"}
    assert demo_vllm.demo_entries(avx512) == demo_vllm.demo_entries(None) == demo_vllm.DEMO_ENTRIES


def test_prepare_on_an_avx2_cpu_says_what_it_leaves_out(tmp_path, monkeypatch, capsys):
    env = VllmEnv(tmp_path / "venv")
    monkeypatch.setattr(demo_vllm, "find_vllm_env", lambda: env)
    monkeypatch.setattr(
        demo_vllm, "make_vllm_models", lambda e, model: {n: tmp_path / "m" / n for n in vllm_model.VARIANTS}
    )
    monkeypatch.setattr(demo_vllm, "cpu_flags", lambda: frozenset("sse2 avx avx2 fma f16c".split()))
    spec = demo_vllm.prepare(tmp_path / "out")
    err = capsys.readouterr().err
    assert [v.label for v in spec.variants] == ["bf16", "W8A8 int8"]
    assert "no AVX-512 (_C_AVX2 kernels)" in err and "no int4 RTN (AWQ) and no bf16 + fp8 KV here" in err
    assert "sweeping bf16, W8A8 int8: one vLLM server at a time" in err


def test_eager_starts_every_server_with_enforce_eager(tmp_path):
    models = {name: tmp_path / name for name in vllm_model.VARIANTS}
    spec = demo_vllm.demo_spec(VllmEnv(tmp_path / "venv"), models, tmp_path / "out", eager=True)
    assert all(v.launch[-1] == "--enforce-eager" for v in spec.variants)


def test_a_cpu_without_avx2_is_one_line_exit_1(tmp_path, monkeypatch, capsys):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse2 avx\n")
    monkeypatch.setattr(demo_vllm, "find_vllm_env", lambda: None)
    monkeypatch.setattr(demo_vllm, "install_vllm", lambda: check_host(cpuinfo=cpuinfo, version=(3, 11)))
    code = main(["demo", "--engine", "vllm", "--headless", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert "demo --engine vllm cannot run here: this CPU lacks AVX2" in err
    assert len(err.strip().splitlines()) == 2 and "Traceback" not in err  # the first-run line, then why


@pytest.mark.parametrize(
    ("argv", "flag"), [(["--engine", "vllm", "--port", "8000"], "--port"), (["--eager"], "--eager")]
)
def test_flags_of_the_other_engine_are_usage_errors(argv, flag, tmp_path, capsys):
    assert main(["demo", "--headless", "--out", str(tmp_path / "out"), *argv]) == 2
    assert flag in capsys.readouterr().err


def test_help_names_both_engines_and_their_cost(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--engine {llamacpp,vllm}" in text and "default: llamacpp" in text
    assert (
        "~5 min, 2.5 GB" in text
        and "with AVX2" in text
        and "two need AVX-512" in text
        and "Each server start takes ~1 min" in text
    )


def _demo(tmp_path: Path, itl_s: float, first_itl_s: float | None = None) -> tuple[subprocess.Popen[str], Path, Path]:
    fake_cache(tmp_path / "cache")
    pids = tmp_path / "pids.txt"
    pids.touch()
    env = dict(os.environ, PRECMON_CACHE=str(tmp_path / "cache"), FAKE_VLLM_PIDS=str(pids))
    env.update(FAKE_VLLM_ITL_S=str(itl_s), PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    if first_itl_s is not None:
        env["FAKE_VLLM_FIRST_ITL_S"] = str(first_itl_s)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "precmon.cli", "demo", "--engine", "vllm", "--headless", "--out", str(out)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, out, pids


def _none_left(pids: Path) -> list[int]:
    left = []
    for pid in map(int, pids.read_text().split()):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left


def this_cpus_labels() -> list[str]:
    """The demo's variants on this machine's CPU: all four with AVX-512, bf16 and int8 on AVX2
    (the demo leaves out what vllm-cpu's _C_AVX2 cannot run; test_prepare_on_an_avx2_cpu… checks that)."""
    return [e.label for e in demo_vllm.demo_entries(cpu_flags())]


def test_headless_demo_sweeps_four_launched_servers(tmp_path):
    proc, out, pids = _demo(tmp_path, itl_s=0.0005)
    try:
        output, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, output[-3000:]
    doc = json.loads((out / "results.json").read_text())
    labels = this_cpus_labels()
    assert [(v["label"], v["status"]) for v in doc["variants"]] == [(label, "ok") for label in labels]
    assert labels[:2] == ["bf16", "W8A8 int8"] and set(labels) <= {
        "bf16",
        "W8A8 int8",
        "int4 RTN (AWQ)",
        "bf16 + fp8 KV",
    }
    if "bf16 + fp8 KV" in labels:
        assert doc["variants"][-1]["server"]["launch_flags"]  # the fp8 KV flag is recorded with the variant
    assert (out / demo_vllm.SWEEP_FILE).is_file() and (out / "journal.jsonl").is_file()
    assert len(pids.read_text().split()) == len(labels) and _none_left(pids) == []


def _wait_for_warmup(proc: subprocess.Popen[str], out: Path) -> None:
    """Until the first variant's warm-up request is in the journal (its decode requests come next)."""
    deadline = time.monotonic() + 120
    journal = out / "journal.jsonl"
    while time.monotonic() < deadline and not (journal.exists() and '"warmup"' in journal.read_text()):
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()[0][-3000:]


def test_a_server_killed_mid_variant_fails_it_naming_the_kill_and_the_demo_goes_on(tmp_path):
    proc, out, pids = _demo(tmp_path, itl_s=0.0005, first_itl_s=0.05)  # bf16: ~6 s a decode request
    try:
        _wait_for_warmup(proc, out)
        time.sleep(0.5)  # the first decode request is streaming now
        os.kill(int(pids.read_text().split()[0]), signal.SIGKILL)
        output, _ = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 1, output[-3000:]  # not every variant ok
    bf16, *others = json.loads((out / "results.json").read_text())["variants"]
    assert bf16["status"] == "failed"
    # errors[0] is what the headless line, the TUI and the report show: the cause, not the symptom
    assert bf16["errors"][0].startswith("the launched server exited during the run (killed by signal 9)")
    assert "bf16: failed — the launched server exited during the run (killed by signal 9)" in " ".join(output.split())
    assert [v["status"] for v in others] == ["ok"] * (len(this_cpus_labels()) - 1)
    assert _none_left(pids) == [] and list((out / "launched").iterdir()) == []


def test_ctrl_c_mid_variant_stops_its_server_and_keeps_the_runs(tmp_path):
    proc, out, pids = _demo(tmp_path, itl_s=0.05)  # 128 tokens: ~6 s a decode request
    try:
        _wait_for_warmup(proc, out)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, output[-3000:]
    [bf16] = json.loads((out / "results.json").read_text())["variants"]
    assert bf16["label"] == "bf16" and any(r["phase"] == "warmup" for r in bf16["runs"])
    deadline = time.monotonic() + 10
    while _none_left(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _none_left(pids) == []
    assert list((out / "launched").iterdir()) == []


def test_ctrl_c_in_the_tui_mid_variant_leaves_no_server(tmp_path):
    """In a real terminal (tmux, 80×24): the demo's TUI sweeping, Ctrl-C twice while bf16 measures
    (`q` `y` takes the same way out: tests/tui/test_tmux_quit.py)."""
    keys = ("C-c", "C-c")
    require(shutil.which("tmux") is not None, "tmux is not installed")
    fake_cache(tmp_path / "cache")
    pids, out = tmp_path / "pids.txt", tmp_path / "out"
    pids.touch()
    sock = f"precmon-demo-{uuid.uuid4().hex[:8]}"
    cmd = (
        f"cd {tmp_path} && PRECMON_CACHE={tmp_path / 'cache'} FAKE_VLLM_PIDS={pids} FAKE_VLLM_ITL_S=0.05 "
        f"PYTHONPATH={ROOT / 'src'}:{ROOT} NO_COLOR=1 TERM=xterm-256color "
        f"{sys.executable} -m precmon.cli demo --engine vllm --out {out}; echo EXITED=$?; sleep 30"
    )
    try:
        subprocess.run(
            ["tmux", "-L", sock, "new-session", "-d", "-s", "precmon", "-x", "80", "-y", "24", "sh", "-c", cmd],
            check=True,
            timeout=10,
            env={**os.environ, "TMUX": ""},
        )
        journal = out / "journal.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (journal.exists() and '"warmup"' in journal.read_text()):
            time.sleep(0.2)
        assert journal.exists(), _screen(sock)
        _tmux(sock, "send-keys", "-t", "precmon", keys[0])
        assert "Stop it and quit" in _wait(sock, lambda t: "Stop it and quit" in t, 5), _screen(sock)
        _tmux(sock, "send-keys", "-t", "precmon", keys[1])
        screen = _wait(sock, lambda t: "EXITED=" in t, 30)
        assert "EXITED=" in screen and "Traceback" not in screen, screen
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
    assert len(pids.read_text().split()) == 1  # quit during the first variant: no second server started
    assert _none_left(pids) == []
    assert list((out / "launched").iterdir()) == []
    assert any(r["phase"] == "warmup" for r in json.loads((out / "results.json").read_text())["variants"][0]["runs"])
