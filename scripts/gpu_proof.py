#!/usr/bin/env python3
"""The whole GPU proof on any Linux machine with an NVIDIA GPU and the CUDA toolkit.

Steps (each skips what is already done, so the run can be split or resumed):
  build      llama.cpp with CUDA (llama-server, llama-quantize, llama-bench) into the precmon cache
  f16        the F16 file alone (it needs only the source); the default `build+f16` runs both at once
  models     a synthetic ~7 B-parameter Llama (random weights, real speed) in F16, Q8_0, Q4_K_M, and
             NVFP4 and MXFP4 (llama-quantize --tensor-type overrides over a Q8_0 base: sweep/ladder.py)
  llamabench llama-bench pp512/tg128 at each depth on the five files (the reference numbers)
  sweep      `precmon sweep --headless` over the five, each launched by precmon with full GPU offload,
             NVML power; meanwhile precmon's own CPU use and, if installed, nvitop's on the same GPU
  live       the same plan run by the TUI itself (needs textual), its screen saved mid-sweep and at the
             end (scripts/live_screenshot.py), with an independent nvidia-smi power log at 100 ms
             beside it, compared with precmon's decode watts (scripts/power_log_compare.py)
  summary    precmon vs llama-bench side by side, the Markdown report, all under WORK/out/
  real       quality on a real model on the GPU: SmolLM2-135M-Instruct's ladder (F16 upcast of the
             Q4_1 release, Q8_0, Q4_0, NVFP4, MXFP4) made with this build's llama-quantize, swept
             with full offload, NVML power and quality against its F16; llama-bench beside it
             (WORK/out/real/). --release gives the Q4_1 GGUF where the machine cannot fetch it
             (it is checked by its sha256 either way)

The plan: F16, Q8_0, Q4_K_M, NVFP4, MXFP4 and Q4_K_M with a q8_0 KV cache; decode, prefill
512/4K/16K, TTFT 4K, depth 0/8K/32K, concurrency 1/4/16, no quality pass (random weights carry speed
only: the real step carries quality); llama-bench pp512/tg128 at the same depths.

Usage (DGX Spark, RTX 4090, H200, ...):
  python3 scripts/gpu_proof.py --work /tmp/precmon-gpu            # everything
  python3 scripts/gpu_proof.py --work /tmp/precmon-gpu --steps build,models
Without network, pass --source-tarball: the llama-cpp-python sdist (`pip download --no-deps
--no-binary :all: llama-cpp-python==0.3.36` on a machine with network) or a llama.cpp tree as .tar.xz;
out/build.json records which llama.cpp was built (the commit, read from the sdist).
Run from the repository root with the package installed, or with PYTHONPATH=src.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

QUANTS = ("F16", "Q8_0", "Q4_K_M", "NVFP4", "MXFP4")
LADDER_ONLY = ("NVFP4", "MXFP4")  # made by sweep/ladder.py's overrides, not testbed.models' presets
KV_VARIANT = ("Q4_K_M kv q8_0", "Q4_K_M", "q8_0")  # label, model, KV-cache type
DEPTHS = (0, 8192, 32768)
CONTEXT = 40960  # one KV pool shared by the 16 slots (-kvu): 32K of depth + a 4K prompt + 256 tokens fit


def say(msg: str) -> None:
    print(f"[gpu_proof {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cuda_choice():
    """This machine's CUDA build (testbed/build_choice.py): the GPU's own architecture from NVML, the
    compiler found; the same build `precmon demo` and `precmon ladder` use, so one build serves all."""
    from precmon.testbed.build_choice import CUDA, choose_build

    choice = choose_build()
    if choice.flavour != CUDA:
        raise SystemExit(f"no CUDA build here: {choice.missing or choice.why}")
    return choice


def step_build(a) -> None:
    from precmon.testbed.llama_build import build_llama, source_record

    choice = cuda_choice()
    say(f"build llama.cpp ({choice.words()}; {choice.why})")
    extra = tuple(a.cmake_args.split())
    nvcc = choice.nvcc.path if choice.nvcc else None
    caps = choice.gpu.capabilities if choice.gpu else ()
    b = build_llama("cuda", source_tarball=a.source_tarball, cmake_args=extra, capabilities=caps, nvcc=nvcc)
    out = a.work / "out"
    out.mkdir(parents=True, exist_ok=True)
    record = {"flavour": "cuda", **source_record(b), "cmake_args": list(extra)}
    (out / "build.json").write_text(json.dumps(record, indent=1) + "\n")


def step_f16(a) -> None:
    """Write the F16 model while the build runs: it needs only the source's vocab and gguf-py."""
    from precmon.testbed.llama_build import chosen_build
    from precmon.testbed.models import SHAPES, write_f16

    b = chosen_build(cuda_choice())
    deadline = time.monotonic() + 300
    while not b.vocab_model.exists() or not (b.source_dir / "gguf-py").exists():
        if time.monotonic() > deadline:
            raise SystemExit("the llama.cpp source was not extracted (run the build step)")
        time.sleep(1)
    out = a.work / "models" / f"{a.shape}-F16.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists():
        write_f16(SHAPES[a.shape], out, b)


def step_build_and_f16(a) -> None:
    t = threading.Thread(target=step_f16, args=(a,))
    t.start()
    step_build(a)
    t.join()


def cuda_build():
    from precmon.testbed.llama_build import chosen_build

    b = chosen_build(cuda_choice())
    if not b.is_complete():
        raise SystemExit("the CUDA build is missing: run the build step first")
    return b


def step_models(a) -> None:
    from precmon.sweep.ladder import RUNGS, quantize
    from precmon.testbed.models import make_models

    build = cuda_build()
    presets = tuple(q for q in a.quants if q != "F16" and q not in LADDER_ONLY)
    paths = make_models(a.shape, a.work / "models", build=build, quants=presets)
    for q in (q for q in LADDER_ONLY if q in a.quants):
        dst = a.work / "models" / f"{a.shape}-{q}.gguf"
        if not dst.exists():
            say(f"quantizing {q} (llama-quantize {' '.join(RUNGS[q].options())} … {RUNGS[q].base_type})")
            quantize(build.tool("llama-quantize"), paths["F16"], dst, RUNGS[q])
        paths[q] = dst
    for k, p in paths.items():
        say(f"model {k}: {p} ({p.stat().st_size / 1e9:.2f} GB)")


def step_llamabench(a) -> None:
    b = cuda_build()
    out = a.work / "out" / "llama-bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        return
    rows = []
    for q in a.quants:
        model = a.work / "models" / f"{a.shape}-{q}.gguf"
        argv = [
            str(b.tool("llama-bench")),
            "-m",
            str(model),
            "-ngl",
            "99",
            "-p",
            "512",
            "-n",
            "128",
            "-d",
            a.depths,
            "-r",
            "3",
            "-o",
            "json",
        ]
        say(" ".join(argv))
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"llama-bench failed on {q}: {proc.stderr[-2000:]}")
        (out.parent / f"llama-bench-{q}.json").write_text(proc.stdout)  # as llama-bench wrote it: `compare` reads it
        for r in json.loads(proc.stdout):
            rows.append(
                {
                    "quant": q,
                    "n_prompt": r["n_prompt"],
                    "n_gen": r["n_gen"],
                    "n_depth": r.get("n_depth", 0),
                    "avg_ts": r["avg_ts"],
                    "stddev_ts": r["stddev_ts"],
                    "model_size": r.get("model_size"),
                    "gpu_info": r.get("gpu_info"),
                    "build_commit": r.get("build_commit"),
                }
            )
            say(f"  {q} pp{r['n_prompt']}/tg{r['n_gen']} @ d{r.get('n_depth', 0)}: {r['avg_ts']:.1f} tok/s")
    out.write_text(json.dumps(rows, indent=2))


def server_argv(a, model: str, port: int, kv: str | None = None) -> list[str]:
    argv = [
        str(cuda_build().tool("llama-server")),
        "-m",
        str(a.work / "models" / f"{a.shape}-{model}.gguf"),
        "-ngl",
        "99",
        "-c",
        str(CONTEXT),
        "-np",
        "16",  # the concurrency levels run at once, not queued
        "-kvu",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--metrics",
        # llama-server's host prompt cache (on by default, 8 GiB) saves the previous prompt's
        # KV state when a new task arrives: ~0.1-0.4 s on an 8 B model, charged to TTFT.
        "--cache-ram",
        "0",
        "-lv",
        "4",  # the KV cache's size is logged only at this verbosity (precmon reads it: KV memory rows)
        # slot actions (erase) need it: precmon empties the 16 slots' cells before each depth step,
        # which a unified KV pool otherwise attends over (docs/design.md §4 "Context depth")
        "--slot-save-path",
        str(a.work / "slots"),
    ]
    return argv + (["-ctk", kv, "-ctv", kv, "-fa", "on"] if kv else [])


def sweep_toml(a) -> str:
    from precmon.sweep.ladder import RUNGS

    (a.work / "slots").mkdir(parents=True, exist_ok=True)  # the servers' --slot-save-path
    lines = [
        "[defaults]",
        "output_tokens = 256",
        "decode_prompt_tokens = 128",
        "prefill_tokens = [512, 4096, 16384]",
        "ttft_tokens = 4096",
        f"depth = [{a.depths}]",
        f"concurrency = [{a.concurrency}]",
        # random weights say nothing of quality: the real step (SmolLM2) carries it
        "quality = false",
        'baseline = "F16"',
        "repeats = 3",
        "warmup = 1",
        "idle_s = 5",
        "cooldown_s = 15",
        "",
    ]
    variants = [(q, q, None) for q in a.quants] + ([KV_VARIANT] if KV_VARIANT[1] in a.quants else [])
    for i, (label, model, kv) in enumerate(variants):
        port = 18200 + i
        lines += [
            "[[variant]]",
            f'label = "{label}"',
            f'precision = "{RUNGS[model].precision}"',
            *([f'kv_cache_dtype = "{kv}"'] if kv else []),
            f"launch = {json.dumps(server_argv(a, model, port, kv))}",
            f'url = "http://127.0.0.1:{port}"',
            "ready_timeout_s = 600",
            "",
        ]
    return "\n".join(lines)


class CpuWatch(threading.Thread):
    """CPU use of a set of processes over their life: (user+system seconds) / wall seconds."""

    def __init__(self, pids: list) -> None:
        """`pids`: process ids or psutil.Process objects."""
        super().__init__(daemon=True)
        import psutil

        self.procs = [p if isinstance(p, psutil.Process) else psutil.Process(p) for p in pids]
        self.done = threading.Event()
        self.last: tuple[float, float] | None = None

    def _cpu(self) -> float:
        import psutil

        total = 0.0
        for p in self.procs:
            try:
                total += sum(p.cpu_times()[:2])
            except psutil.NoSuchProcess:
                pass
        return total

    def run(self) -> None:
        t0, c0 = time.monotonic(), self._cpu()
        while not self.done.wait(1.0):
            self.last = (time.monotonic() - t0, self._cpu() - c0)

    def percent(self) -> float | None:
        return round(100.0 * self.last[1] / self.last[0], 2) if self.last and self.last[0] > 0 else None


def python_path() -> str:
    """src/ first, keeping the caller's PYTHONPATH: the monitors get this environment, and one installed
    with `pip --target` (nvitop and textual on the H200) imports from there."""
    return os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)


def monitor_commands() -> list[tuple[str, str]]:
    """Live monitors to run beside the sweep, each in its own pseudo-terminal, for the CPU comparison:
    nvitop at its default (GPU and processes every 2 s) and at 0.5 s, and precmon's own watch screen
    (10 Hz power sampler, repainted every 0.25 s), which needs textual."""
    return [
        ("nvitop", "nvitop"),
        ("nvitop-0.5s", "nvitop --interval 0.5"),
        ("precmon-watch", f"{sys.executable} -m precmon.cli watch"),
    ]


def installed(command: str) -> bool:
    if " -m precmon.cli " in command:
        import importlib.util

        return importlib.util.find_spec("textual") is not None
    return shutil.which(command.split()[0]) is not None


class PtyMonitor:
    """A terminal program run under `script` in a 120x40 pseudo-terminal, its CPU time measured.

    Runs 1 and 2 measured the `sh -c` wrapper that `script` starts and read 0.0%, with the screen
    thrown away and no terminal size or TERM set. Here the wrapper `exec`s the program and every
    process under `script` is summed, the screen is kept to prove the program drew, and whether it was
    still alive at the end is recorded (a dead monitor reads null, not 0).
    """

    def __init__(self, name: str, command: str, screen: Path, env: dict) -> None:
        self.name, self.command, self.screen = name, command, screen
        inner = f"stty rows 40 cols 120; exec {command}"
        self.proc = subprocess.Popen(
            ["script", "-qfc", inner, str(screen)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "TERM": "xterm-256color"},
            start_new_session=True,
        )

    def begin(self) -> None:
        """Start counting CPU time (after the program has started, so its start-up cost is not counted)."""
        import psutil

        self.kids, self.cmdlines = [], []
        try:
            for k in psutil.Process(self.proc.pid).children(recursive=True):
                try:
                    self.cmdlines.append(" ".join(k.cmdline()))
                    self.kids.append(k)
                except psutil.NoSuchProcess:  # gone between listing and reading
                    pass
        except psutil.NoSuchProcess:  # it died at start: finish() reports it not alive
            pass
        self.watch = CpuWatch(self.kids)
        self.watch.start()

    watch: CpuWatch | None = None
    cmdlines: list[str] = []

    def finish(self) -> dict:
        if self.watch is not None:
            self.watch.done.set()
            self.watch.join()
        alive = self.proc.poll() is None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        return {
            "command": self.command,
            "processes": self.cmdlines,
            "alive_at_end": alive,
            "cpu_percent_of_one_core": self.watch.percent() if alive and self.watch else None,
            "measured_s": round(self.watch.last[0], 1) if self.watch and self.watch.last else None,
            "screen_bytes": self.screen.stat().st_size if self.screen.exists() else 0,
        }


def step_sweep(a) -> None:
    out = a.work / "out"
    sweep_dir = out / "sweep"
    out.mkdir(parents=True, exist_ok=True)
    if (sweep_dir / "results.json").exists() and not a.force:
        doc = json.loads((sweep_dir / "results.json").read_text())
        if all(v["status"] == "ok" for v in doc["variants"]) and len(doc["variants"]) == len(a.quants):
            say("sweep already done")
            return
    spec = a.work / "sweep.toml"
    spec.write_text(sweep_toml(a))
    (out / "sweep.toml").write_text(spec.read_text())
    env = {**os.environ, "PYTHONPATH": python_path(), "PYTHONUNBUFFERED": "1"}
    from precmon.sweep.store import earlier_results

    argv = [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(sweep_dir)]
    if earlier_results(sweep_dir):  # results.json, or a journal of a run killed before it: continued
        argv.append("--resume")
    say(" ".join(argv))
    log = open(out / "sweep.log", "w")
    # the monitors start first and are counted over the same window as the sweep
    monitors = [
        PtyMonitor(name, cmd, out / f"screen-{name}.typescript", env)
        for name, cmd in monitor_commands()
        if installed(cmd)
    ]
    try:
        time.sleep(3 if monitors else 0)
        for m in monitors:
            m.begin()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        watch = CpuWatch([proc.pid])
        watch.start()
        code = proc.wait()
        watch.done.set()
        watch.join()
    finally:
        monitored = {m.name: m.finish() for m in monitors}  # nothing left running on a failure either
    footprint = {
        "precmon_cpu_percent_of_one_core": watch.percent(),
        "precmon_exit_code": code,
        "cores": os.cpu_count(),
        "monitors": monitored,
        "monitors_not_installed": [n for n, c in monitor_commands() if not installed(c)],
    }
    (out / "footprint.json").write_text(json.dumps(footprint, indent=2))
    say(f"sweep exit {code}; footprint {footprint}")


def step_live(a) -> None:
    """The plan run by the TUI itself, its screen saved; an nvidia-smi log at 100 ms beside it."""
    out = a.work / "out"
    live = out / "live"
    live.mkdir(parents=True, exist_ok=True)
    if (live / "results").exists():  # an earlier run's: kept aside, so this run's land where they are read
        (live / "results").rename(live / f"results-before-{time.strftime('%H%M%S')}")
    spec = live / "sweep.toml"
    spec.write_text(sweep_toml(a))
    env = {**os.environ, "PYTHONPATH": python_path(), "PYTHONUNBUFFERED": "1"}
    query = "timestamp,power.draw,power.draw.instant,clocks.sm,temperature.gpu,utilization.gpu,memory.used"
    with open(live / "nvidia-smi.csv", "w") as log:
        smi = None
        if shutil.which("nvidia-smi"):
            smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={query}", "--format=csv", "-lms", "100"], stdout=log)
        else:
            say("no nvidia-smi here: no independent power log")
        try:
            argv = [sys.executable, str(ROOT / "scripts" / "live_screenshot.py"), str(spec), "--out", str(live)]
            argv += ["--size", "120x40", "--mid-runs", "4", "--timeout", str(a.live_timeout_s)]
            say(" ".join(argv))
            code = subprocess.run(argv, env=env, check=False).returncode
        finally:
            if smi is not None:
                smi.terminate()
                smi.wait()
    say(f"live sweep exit {code}")
    results = live / "results" / "results.json"
    if results.exists():
        cmp = [
            sys.executable,
            str(ROOT / "scripts" / "power_log_compare.py"),
            str(results),
            str(live / "nvidia-smi.csv"),
        ]
        with open(live / "power-log-compare.md", "w") as f:
            subprocess.run([*cmp, "--json", str(live / "power-log-compare.json")], stdout=f, env=env, check=False)
        say((live / "power-log-compare.md").read_text())


def step_summary(a) -> None:
    out = a.work / "out"
    results = out / "sweep" / "results.json"
    if not results.exists():  # the plan was run by the TUI (step live)
        results = out / "live" / "results" / "results.json"
    doc = json.loads(results.read_text())
    lb = json.loads((out / "llama-bench.json").read_text()) if (out / "llama-bench.json").exists() else []
    env = {**os.environ, "PYTHONPATH": python_path()}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "precmon.cli",
            "report",
            str(results),
            "--format",
            "md",
            "--out",
            str(out / "report.md"),
        ],
        env=env,
        check=False,
    )
    lines = [
        "| variant | precmon decode tok/s | server decode tok/s | llama-bench tg128 | Δ decode | "
        "precmon prefill 512 tok/s | llama-bench pp512 | precmon W decode | idle W |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in doc["variants"]:
        m = v["metrics"]
        at0 = [r for r in lb if r["quant"] == v["label"] and not r.get("n_depth")]
        tg = next((r["avg_ts"] for r in at0 if r["n_gen"] == 128), None)
        pp = next((r["avg_ts"] for r in at0 if r["n_prompt"] == 512), None)
        pre = (m.get("prefill_ms_per_token") or {}).get("512")
        dec = m.get("decode_tok_s")
        delta = f"{(dec / tg - 1) * 100:+.1f}%" if dec and tg else "n/a"
        lines.append(
            f"| {v['label']} | {dec} | {m.get('server_decode_tok_s')} | {tg and round(tg, 1)} | {delta} | "
            f"{pre and round(1000 / pre, 1)} | {pp and round(pp, 1)} | {m.get('power_decode_w')} | "
            f"{m.get('power_idle_w')} |"
        )
    if (out / "footprint.json").exists():
        fp = json.loads((out / "footprint.json").read_text())
        lines += [
            "",
            "| process during the sweep | CPU % of one core | alive at end |",
            "|---|---:|---|",
            f"| precmon sweep --headless | {fp['precmon_cpu_percent_of_one_core']} | exit {fp['precmon_exit_code']} |",
        ]
        for name, m in fp.get("monitors", {}).items():
            lines.append(f"| {name} (`{m['command']}`) | {m['cpu_percent_of_one_core']} | {m['alive_at_end']} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


#: The real step's plan: what varies with the weights is quality; speed on a 135 M model is the
#: launch and kernel overhead of each format, so the plan is short (the 8 B shape carries speed).
REAL_PLAN = """\
repeats = 3
warmup = 1
output_tokens = 256
decode_prompt_tokens = 128
prefill_tokens = [512, 2048]
ttft_tokens = 2048
idle_s = 3
cooldown_s = 3
ready_timeout_s = 300
"""
REAL_PORT = 18400


def step_real(a) -> None:
    """SmolLM2's ladder on the GPU: made with this build's llama-quantize, swept with quality on."""
    from precmon.sweep.ladder import RUNGS, LadderFile
    from precmon.sweep.ladder import sweep_toml as ladder_toml
    from precmon.testbed import real_model

    build = cuda_build()
    out = a.work / "out" / "real"
    out.mkdir(parents=True, exist_ok=True)
    if a.release is not None:  # carried in: checked here as the fetch checks it
        dest = real_model.release_path()
        if not dest.exists():
            got = real_model.sha256_of(a.release)
            if got != real_model.SHA256:
                raise SystemExit(f"{a.release}: sha256 {got[:12]}…, expected {real_model.SHA256[:12]}…")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(a.release, dest)
        say(f"release {dest}: sha256 {real_model.SHA256[:12]}… (checked)")
    started = time.monotonic()
    paths = real_model.make_ladder(build)
    say(f"ladder made in {time.monotonic() - started:.0f} s: {', '.join(paths)}")
    files = [LadderFile(RUNGS[label], path, None) for label, path in paths.items()]
    server_args = ["-ngl", "99", "-c", "8192", "-lv", "4"]
    toml = ladder_toml(files, str(build.tool("llama-server")), REAL_PORT, server_args)
    spec = out / "sweep.toml"
    spec.write_text(toml.replace("[defaults]\n", "[defaults]\n" + REAL_PLAN, 1))
    env = {**os.environ, "PYTHONPATH": python_path(), "PYTHONUNBUFFERED": "1"}
    from precmon.sweep.store import earlier_results

    argv = [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out / "sweep")]
    argv += ["--resume"] if earlier_results(out / "sweep") else []  # run again: what is done stays done
    say(" ".join(argv))
    with open(out / "sweep.log", "w") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, check=False).returncode
    say(f"real sweep exit {code}")
    report = [sys.executable, "-m", "precmon.cli", "report", str(out / "sweep" / "results.json")]
    subprocess.run([*report, "--format", "md", "--out", str(out / "report.md")], env=env, check=False)
    for label, path in paths.items():
        argv = [str(build.tool("llama-bench")), "-m", str(path), "-ngl", "99", "-p", "512", "-n", "128"]
        proc = subprocess.run([*argv, "-r", "3", "-o", "json"], capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            (out / f"llama-bench-{label}.json").write_text(proc.stdout)
        else:
            say(f"llama-bench {label} failed: {proc.stderr[-500:]}")


STEPS = {
    "build+f16": step_build_and_f16,
    "build": step_build,
    "f16": step_f16,
    "models": step_models,
    "llamabench": step_llamabench,
    "sweep": step_sweep,
    "live": step_live,
    "summary": step_summary,
    "real": step_real,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=Path("/tmp/precmon-gpu"))
    p.add_argument("--steps", default="build+f16,models,llamabench,sweep,summary")
    p.add_argument("--shape", default="8b")
    p.add_argument("--source-tarball", type=Path, default=None)
    p.add_argument(
        "--cmake-args",
        default="",
        help='more CMake options for the build, e.g. "-DGGML_CUDA_FA=OFF" (recorded in out/build.json)',
    )
    p.add_argument("--release", type=Path, default=None, help="the real step's Q4_1 GGUF, where it cannot be fetched")
    p.add_argument("--force", action="store_true")
    p.add_argument(
        "--depths", default=",".join(str(d) for d in DEPTHS), help="context depths (tokens), comma-separated"
    )
    p.add_argument("--concurrency", default="1,4,16", help="concurrency levels, comma-separated")
    p.add_argument(
        "--quants",
        default=",".join(QUANTS),
        help=f"the rungs to make, bench and sweep, comma-separated (default {','.join(QUANTS)}; "
        "the q8_0-KV variant comes with Q4_K_M)",
    )
    p.add_argument("--live-timeout-s", type=float, default=1500.0, help="the live step's limit for the whole plan")
    a = p.parse_args()
    a.quants = tuple(q.strip() for q in a.quants.split(",") if q.strip())
    if unknown := [q for q in a.quants if q not in QUANTS]:
        p.error(f"--quants: {', '.join(unknown)} not among {', '.join(QUANTS)}")
    if "F16" not in a.quants:
        p.error("--quants: F16 is needed (every other rung is made from it, and it is the baseline)")
    a.work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PRECMON_CACHE", str(a.work / "cache"))
    for name in a.steps.split(","):
        started = time.monotonic()
        say(f"step {name}")
        STEPS[name](a)
        say(f"step {name} done in {time.monotonic() - started:.0f} s")
        (a.work / f"done-{name}").write_text("ok\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
