"""Fixtures of the exporter tests: a fixture sysfs, an exporter process, a real Prometheus.

Prometheus is Debian's `prometheus` package (.ci/run installs it). Each test that needs it
starts its own on a free loopback port with a temporary config and TSDB, scraping every second,
and stops it after; CI=true turns a missing binary into a failure (`require`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "report" / "data"
READY_WAIT_S = 30.0
SPBM = {  # DGX Spark's power driver: two channels with energy counters
    "name": "spbm",
    "power1_label": "sys_total",
    "power1_input": 38_200_000,
    "energy1_label": "sys_total",
    "energy1_input": 5_000_000_000,
    "power2_label": "gpu",
    "power2_input": 9_250_000,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_sysfs(root: Path, devices: dict[str, dict[str, object]]) -> Path:
    """Fake `/sys/class/hwmon/<dev>/<file>` trees under `root` (pointed to by PRECMON_SYSFS_ROOT)."""
    for dev, files in devices.items():
        d = root / "sys" / "class" / "hwmon" / dev
        d.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (d / name).write_text(f"{content}\n")
    (root / "proc").mkdir(exist_ok=True)
    return root


def get(url: str, timeout_s: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as r:
        return r.read().decode()


def wait_for(url: str, what: str, timeout_s: float = READY_WAIT_S) -> str:
    deadline, last = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        try:
            return get(url, 2.0)
        except OSError as exc:
            last = str(exc)
        time.sleep(0.2)
    raise AssertionError(f"{what} not ready within {timeout_s:.0f} s: {last}")


class ExporterProc:
    """`python -m precmon exporter ...` with the fixture sysfs, stopped by SIGINT."""

    def __init__(self, args: list[str], sysfs: Path | None) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        if sysfs is not None:
            env["PRECMON_SYSFS_ROOT"], env["PRECMON_PROC_ROOT"] = str(sysfs), str(sysfs / "proc")
        cmd = [sys.executable, "-m", "precmon", "exporter", *args]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


@pytest.fixture
def exporter_proc() -> Iterator[object]:
    started: list[ExporterProc] = []

    def start(args: list[str], sysfs: Path | None = None) -> ExporterProc:
        p = ExporterProc(args, sysfs)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


class Prometheus:
    """A real Prometheus scraping `targets` every second; `query()` is an instant query."""

    def __init__(self, binary: str, tmp: Path, targets: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = tmp / "prometheus.yml"
        job = {"job_name": "precmon", "scrape_interval": "1s", "static_configs": [{"targets": targets}]}
        config.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": [job]}))  # JSON is YAML
        cmd = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.log = (tmp / "prometheus.log").open("w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_for(f"{self.url}/-/ready", "prometheus")
        except AssertionError:
            self.stop()
            raise

    def query(self, promql: str) -> list[dict[str, object]]:
        q = urllib.parse.urlencode({"query": promql})
        body = json.loads(get(f"{self.url}/api/v1/query?{q}"))
        assert body["status"] == "success", body
        return body["data"]["result"]

    def query_until(self, promql: str, timeout_s: float = 30.0) -> list[dict[str, object]]:
        """The first non-empty answer (Prometheus needs a scrape or two after starting)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.query(promql)
            if found:
                return found
            time.sleep(0.5)
        raise AssertionError(f"no series for {promql!r} within {timeout_s:.0f} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[object]:
    binary = shutil.which("prometheus")
    require(binary is not None, "Debian's prometheus package is not installed (.ci/run installs it)")
    assert binary is not None
    started: list[Prometheus] = []

    def start(targets: list[str]) -> Prometheus:
        p = Prometheus(binary, tmp_path, targets)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()
