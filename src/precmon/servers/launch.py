"""Start a server process, wait until it is healthy, stop it cleanly.

Used by sweeps with `launch = [...]`, by `precmon demo` and by the integration tests. The argv
runs without a shell. Output goes to a log file whose last lines explain a failure to start.
Stopping escalates SIGINT → SIGTERM → SIGKILL and always waits, so the next variant never
shares the machine with a dying server.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from precmon.servers.base import ServerError
from precmon.servers.log_cause import failure_text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One launched server. `with ServerProcess(argv, url) as p:` starts and stops it."""

    def __init__(
        self,
        argv: list[str],
        url: str,
        log_path: Path,
        ready_timeout_s: float = 300.0,
        health_paths: tuple[str, ...] = ("/health", "/v1/models"),
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv, self.url = list(argv), url.rstrip("/")
        self.log_path, self.ready_timeout_s = Path(log_path), ready_timeout_s
        self.health_paths, self.env = health_paths, env
        self.proc: subprocess.Popen[bytes] | None = None

    def _answers(self) -> bool:
        with httpx.Client(base_url=self.url, timeout=1.0) as c:
            for path in self.health_paths:
                try:
                    c.get(path)
                    return True
                except httpx.HTTPError:
                    pass
        return False

    def start(self) -> None:
        if self._answers():  # else we would measure whatever old server holds the port
            raise ServerError(
                f"{self.url} already answers before {self.argv[0]} was started: "
                "stop the server that holds that port, or launch on another"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(self.env or {})},
                start_new_session=True,
            )
        except OSError as exc:
            raise ServerError(f"cannot start {self.argv[0]}: {exc}") from exc
        finally:
            log.close()

    def wait_ready(self, progress: Callable[[float], None] | None = None) -> float:
        """Block until a health path answers 200; returns seconds waited."""
        assert self.proc is not None
        started = time.monotonic()
        with httpx.Client(base_url=self.url, timeout=2.0) as c:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise ServerError(
                        f"{self.argv[0]} exited with code {code} before it was ready; {self.failure_log(5)}"
                    )
                for path in self.health_paths:
                    try:
                        if c.get(path).status_code == 200:
                            return time.monotonic() - started
                    except httpx.HTTPError:
                        pass
                waited = time.monotonic() - started
                if waited > self.ready_timeout_s:
                    self.stop()
                    raise ServerError(
                        f"{self.url} not healthy after {self.ready_timeout_s:.0f} s; {self.failure_log(5)}"
                    )
                if progress:
                    progress(waited)
                time.sleep(0.2)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited_within(self, wait_s: float) -> bool:
        """Whether the process has exited, or does within `wait_s`: a server killed mid-request resets
        its sockets a moment before the kernel reports it gone, so an I/O error can arrive first."""
        if self.proc is None:
            return True
        try:
            self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGINT, then SIGTERM, then SIGKILL, to the whole process group; waits for exit.

        The group gets a final SIGKILL even when its leader is already gone (a crashed API server
        whose engine child still holds the GPU), and a second Ctrl-C cannot cut the escalation short.
        """
        if self.proc is None:
            return None
        pgid = self.proc.pid  # start_new_session=True: the leader's pid is the group id
        try:
            if self.proc.poll() is None:
                for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, 30.0)):
                    try:
                        os.killpg(pgid, sig)
                    except ProcessLookupError:
                        break
                    try:
                        self.proc.wait(timeout=wait_s)
                        break
                    except subprocess.TimeoutExpired:
                        continue
        except KeyboardInterrupt:
            pass
        finally:
            try:
                os.killpg(pgid, signal.SIGKILL)  # stragglers of the group
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=30.0)
            except subprocess.TimeoutExpired:
                pass
        return self.proc.poll()

    def _log_lines(self) -> list[str] | None:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return None

    def last_log(self, n: int = 20) -> str:
        lines = self._log_lines()
        if lines is None:
            return "(no log)"
        return " | ".join(line.strip() for line in lines[-n:] if line.strip())

    def failure_log(self, n: int = 5) -> str:
        """Why it failed, for an error line: the exception its log names, then its last `n` lines."""
        lines = self._log_lines()
        return "last log lines: (no log)" if lines is None else failure_text(lines, n)

    def __enter__(self) -> ServerProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
