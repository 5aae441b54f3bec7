"""One rule for which llama.cpp tools a command runs (testbed/llama_tools.py): a named tool, else
precmon's own build for this machine; never PATH's unless named. The same command picks the same
llama-server on its first run (which builds) and its second (which finds the build cached); the
demo serves with every layer on the GPU for a CUDA build; a failed build says where its log is."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.cli import main
from precmon.cli.commands import demo_cmd, ladder_cmd
from precmon.sweep.spec import load_spec
from precmon.testbed import demo_server, llama_build
from precmon.testbed.build_choice import CUDA, BuildChoice, cpu_choice
from precmon.testbed.cuda_probe import GpuSeen
from precmon.testbed.llama_tools import QUANTIZE, SERVER, named, pick_tools
from tests.sweep.test_ladder import _gguf

#: llama-quantize's argument order is `[options] SRC DST TYPE`: this one copies SRC to DST.
COPYING_QUANTIZE = '#!/bin/sh\nfor a; do p3=$p2; p2=$p1; p1=$a; done\ncp "$p3" "$p2"\n'


@pytest.fixture
def fake_builds(tmp_path, monkeypatch):
    """An empty precmon cache whose builds are made by writing the tools (no compiler), and a PATH
    holding a llama-server of its own: every build made is recorded."""
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PRECMON_LLAMA_SERVER", raising=False)
    path_dir = tmp_path / "path-bin"
    path_dir.mkdir()
    for tool in ("llama-server", "llama-quantize"):
        (path_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (path_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{path_dir}:/usr/bin:/bin")
    built: list[Path] = []

    def build(b, flavour, *_args, **_kw):
        built.append(b.root)
        for tool in llama_build.TOOLS:
            b.tool(tool).parent.mkdir(parents=True, exist_ok=True)
            b.tool(tool).write_text(COPYING_QUANTIZE)
            b.tool(tool).chmod(0o755)
        b.stamp.write_text("ok\n")
        return b

    monkeypatch.setattr(llama_build, "_build", build)
    return built, path_dir


def test_the_same_call_picks_the_same_llama_server_before_and_after_the_build(fake_builds):
    built, path_dir = fake_builds
    first = pick_tools(cpu_choice())[SERVER]
    second = pick_tools(cpu_choice())[SERVER]
    assert len(built) == 1  # the first run built it, the second found it cached
    assert first == second and first.ours and first.path.parent == llama_build.build_for("cpu").bin_dir
    assert path_dir not in (first.path.parent, second.path.parent)  # PATH's is never taken unnamed
    assert first.line() == f"llama-server: {first.path} (precmon's CPU build)"


def test_a_named_tool_wins_and_brings_its_siblings(fake_builds, tmp_path, monkeypatch):
    built, path_dir = fake_builds
    tools = pick_tools(cpu_choice(), {SERVER: str(path_dir / "llama-server"), QUANTIZE: None})
    assert tools[SERVER].origin == "--server" and tools[QUANTIZE].path == path_dir / "llama-quantize"
    assert tools[QUANTIZE].origin == "beside --server's llama-server" and built == []
    assert named({SERVER: "llama-server"}, env={})[SERVER].path == path_dir / "llama-server"  # named: PATH's
    env = {"PRECMON_LLAMA_SERVER": str(tmp_path / "mine" / "llama-server")}
    assert named({}, env=env)[SERVER].origin == "$PRECMON_LLAMA_SERVER"


def test_precmon_ladder_writes_the_same_server_on_its_first_and_second_run(fake_builds, tmp_path, monkeypatch, capsys):
    built, path_dir = fake_builds
    monkeypatch.setattr(ladder_cmd, "choose_build", lambda force_cpu: cpu_choice())
    wide = _gguf(tmp_path / "m-F16.gguf", 1)
    servers = []
    for out in ("one", "two"):
        assert main(["ladder", str(wide), "--out", str(tmp_path / out), "--rungs", "Q8_0"]) == 0
        spec = load_spec(tmp_path / out / "ladder.toml")
        servers.append({v.launch[0] for v in spec.variants})
        printed = capsys.readouterr()
        assert "llama-server in the sweep file:" in printed.out and "(precmon's CPU build)" in printed.out
    assert servers[0] == servers[1] == {str(llama_build.build_for("cpu").tool("llama-server"))}
    assert len(built) == 1


def test_the_demo_serves_a_cuda_build_with_every_layer_on_the_gpu(fake_builds, tmp_path, monkeypatch):
    started: list[dict] = []
    monkeypatch.setattr(demo_server, "make_ladder", lambda build: {"F16": tmp_path / "m" / "smollm2-F16.gguf"})
    monkeypatch.setattr(demo_server, "start_llama_server", lambda binary, log, **kw: started.append(kw) or "proc")
    cuda = BuildChoice(CUDA, GpuSeen("NVIDIA H200", ("9.0",)), why="NVML sees it")
    said: list[str] = []
    demo = demo_server.start_demo_server(9, tmp_path, say=said.append, choose=lambda force_cpu: cuda)
    # -lv 4 reaches the router's children, whose logs then name their backend and KV size (at the
    # default verbosity a CUDA child's log names no backend: the demo's compute path read "CPU")
    assert started[0]["extra"] == ["-ngl", "99", "-lv", "4"] and "with every layer on the GPU" in said[-1]
    assert demo.binary == llama_build.build_for(CUDA, capabilities=("9.0",)).tool("llama-server")
    assert any(line.startswith("first run: building llama.cpp (CUDA for NVIDIA H200 (SM 9.0))") for line in said)
    cpu = demo_server.start_demo_server(9, tmp_path, say=said.append, choose=lambda force_cpu: cpu_choice())
    assert started[1]["extra"] == ["-lv", "4"] and cpu.binary.parent == llama_build.build_for("cpu").bin_dir


def test_a_failed_cuda_build_names_its_log_and_offers_cpu(tmp_path):
    log = tmp_path / "build.log"
    exc = llama_build.BuildError("compile failed (exit 2):\nnvcc fatal : Unsupported gpu architecture", log)
    cuda = BuildChoice(CUDA, GpuSeen("NVIDIA GB10", ("12.1",)))
    line = demo_server.build_failed(exc, cuda, "precmon demo")
    assert line == (
        f"the CUDA build of llama.cpp failed (compile failed (exit 2)); its log: {log}; "
        "`precmon demo --cpu` runs on the CPU instead"
    )
    assert demo_server.build_failed(exc, cpu_choice(), "precmon demo") == f"compile failed (exit 2); its log: {log}"


def test_demo_cpu_reaches_the_build_choice(monkeypatch):
    seen: list[bool] = []

    def prepare(port: int = 0, log_dir=None, force_cpu: bool = False):
        seen.append(force_cpu)
        raise llama_build.BuildError("stop here")

    monkeypatch.setattr(demo_cmd, "prepare", prepare)
    assert main(["demo", "--headless", "--cpu"]) == 1
    assert main(["demo", "--headless"]) == 1
    assert seen == [True, False]
