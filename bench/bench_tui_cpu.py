"""TUI CPU beside nvitop's, in one run: precmon idle, in watch mode and during a sweep, and nvitop
at a 2 s and a 0.5 s refresh interval (docs/design.md §7; issue: watch mode at or below nvitop's
CPU at its default 2 s, and within 1.5× of nvitop at 0.5 s).

    python bench/bench_tui_cpu.py [--python PY] [--seconds 30] [--url URL] [--json OUT.json] [--size 120x40]

Each program runs in its own pseudo-terminal of 120×40 by default (no tmux needed); its CPU is the user +
system time of the process and its children over `--seconds`, after a `WARMUP_S` start-up (long
enough for precmon's first readings, so a one-time layout is not counted as steady state),
read from /proc (Linux), as a share of one core. precmon runs from this checkout's sources with
`--python` (default: this interpreter), and so does nvitop (`PY -m nvitop`, installed into PY:
`pip install nvitop`, or from the wheels in .dev/wheels). nvitop needs an NVIDIA GPU; where it
is missing or exits (no GPU, no driver), its rows are n/a with the reason.

Servers: watch mode and idle watch a built-in fake llama-server (`FakeLlama`: /health, /props,
/v1/models, /metrics, and /slots with one slot decoding 50 tok/s), so the live-rate path runs
every second as it would against real traffic; `--url` watches a real server instead. The sweep
runs three variants against tests/fakes/timed_server.py (a real local HTTP server streaming
tokens), measurement client included. precmon's interval is its `--refresh-s` (repaint and power
reads while nothing is measured; the server is polled at most once a second): watch mode runs at
nvitop's two intervals, the main screen and the sweep at precmon's default. Two floor rows run
bench/textual_floor.py: Textual never repainting, and Textual repainting one full screen of
cached lines at nvitop's intervals (what the toolkit costs before precmon does anything).

`--pairs N --interval S` measures only the head-to-head: `precmon watch` and nvitop at one interval,
back to back, N rounds, the order swapped each round (so drift on the box falls on both alike).
Each row is whole clock ticks of CPU (1/CLK_TCK s): over 30 s a tick is 0.03 % of a core, so a
difference of a tick or two is the resolution, not a finding; pairs over longer runs settle it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
from precmon.refresh import DEFAULT_REFRESH_S  # noqa: E402 - after the path

INTERVALS = ("2", "0.5")  # nvitop's default, and a fast one (the two comparisons)
WARMUP_S = 8.0
COLS, ROWS = 120, 40
CLK_TCK = os.sysconf("SC_CLK_TCK")


class FakeLlama(ThreadingHTTPServer):
    """Just enough llama-server for precmon's watch loop: health, facts, /metrics, a busy /slots."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.t0 = time.monotonic()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


KEEPALIVE_MAX = 100  # requests per connection: llama-server's (vendored cpp-httplib 0.58, 5 s idle timeout)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, as llama-server answers: a poller's connection is reused, so its
    cost is a request's, not a TCP connect's (HTTP/1.0 here overstated it until 2026-12-02)."""

    protocol_version = "HTTP/1.1"
    timeout = 5.0
    served = 0

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, body: bytes, ctype: str = "application/json") -> None:
        self.served += 1
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if self.served >= KEEPALIVE_MAX:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        decoded = int((time.monotonic() - self.server.t0) * 50) % 100_000  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        if path == "/health":
            self._send(b'{"status":"ok"}')
        elif path == "/props":
            self._send(json.dumps({"build_info": "b0-bench", "model_path": "fake-Q4_K_M.gguf"}).encode())
        elif path == "/v1/models":
            self._send(b'{"object":"list","data":[{"id":"fake-Q4_K_M","object":"model"}]}')
        elif path == "/slots":
            slot = {"id": 0, "id_task": 1, "is_processing": True, "next_token": [{"n_decoded": decoded}]}
            self._send(json.dumps([slot]).encode())
        elif path == "/metrics":
            text = "llamacpp:tokens_predicted_total 0\nllamacpp:requests_processing 1\n"
            self._send(text.encode(), "text/plain; version=0.0.4")
        else:
            self.send_error(404)
            self.close_connection = True


def _tree_cpu_s(pid: int) -> float:
    """User + system seconds of `pid` and every descendant alive now (from /proc)."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += stats[p][1]
        todo.extend(c for c, (ppid, _) in stats.items() if ppid == p)
    return total


class InPty:
    """A program in its own pseudo-terminal of COLS×ROWS; its output is read and dropped."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        import fcntl
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.master, self.tail = master, b""
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True, close_fds=True
        )
        os.close(slave)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.tail = (self.tail + chunk)[-4096:]

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        os.close(self.master)


def measure(argv: list[str], seconds: float, env: dict[str, str], keys: str = "") -> tuple[float | None, str]:
    """(% of one core over `seconds`, note); None and the reason when the program exits early."""
    prog = InPty(argv, env)
    try:
        time.sleep(WARMUP_S)
        if keys:
            prog.send(keys)
            time.sleep(1.0)
        if prog.proc.poll() is not None:
            last = prog.tail.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            return None, f"exited {prog.proc.returncode}: {last[0][:100]}"
        c0, t0 = _tree_cpu_s(prog.proc.pid), time.monotonic()
        time.sleep(seconds)
        if prog.proc.poll() is not None:
            return None, f"exited {prog.proc.returncode} while measured"
        return 100.0 * (_tree_cpu_s(prog.proc.pid) - c0) / (time.monotonic() - t0), ""
    finally:
        prog.close()


def sweep_spec(url: str, folder: Path) -> Path:
    """Three variants long enough to outlast the measurement (many repeats, no idle waits)."""
    spec = folder / "sweep.toml"
    spec.write_text(
        f'[defaults]\nurl = "{url}"\noutput_tokens = 256\ndecode_prompt_tokens = 64\n'
        "prefill_tokens = [256, 1024]\nttft_tokens = 1024\nrepeats = 30\nwarmup = 1\nidle_s = 0\ncooldown_s = 0\n"
        + "".join(f'\n[[variant]]\nlabel = "V{i}"\nprecision = "int4"\nmodel = "fake-Q4_K_M"\n' for i in range(3))
    )
    return spec


def has_nvitop(python: str) -> bool:
    probe = subprocess.run([python, "-c", "import nvitop"], capture_output=True)
    return probe.returncode == 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=sys.executable, help="the interpreter that runs precmon and nvitop")
    p.add_argument("--seconds", type=float, default=30.0, help="measured seconds per program (after start-up)")
    p.add_argument("--url", help="watch this server instead of the built-in fake llama-server")
    p.add_argument("--json", default="bench_tui_cpu.json", help="where to write the results")
    p.add_argument("--size", default="120x40", help="terminal COLSxROWS (80x24: no per-second chart)")
    p.add_argument("--pairs", type=int, default=0, help="only precmon watch beside nvitop, N rounds (order swapped)")
    p.add_argument("--interval", default=INTERVALS[0], help="the refresh interval of --pairs, in seconds")
    args = p.parse_args(argv)
    if args.pairs < 0:
        p.error("--pairs: a count of rounds, 0 or more")
    global COLS, ROWS
    COLS, ROWS = (int(x) for x in args.size.lower().split("x"))
    from tests.fakes.timed_server import Behaviour, TimedServer

    env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    precmon = [args.python, "-m", "precmon"]
    fake = FakeLlama()
    url = args.url or fake.url
    rows: list[dict[str, object]] = []

    def row(name: str, interval: str, result: tuple[float | None, str]) -> None:
        pct, note = result
        rows.append({"program": name, "interval": interval, "cpu_pct_of_one_core": pct, "note": note})
        print(f"  {name:<44} {interval:>9} {'n/a' if pct is None else f'{pct:5.1f}%':>7}  {note}", flush=True)

    print(f"{'program':<46} {'interval':>9} {'CPU':>7}  ({args.seconds:.0f} s each, {COLS}x{ROWS} pty)")
    if args.pairs:
        return head_to_head(args, precmon, url, env, row, rows, fake)
    default = f"{DEFAULT_REFRESH_S:g} s"
    row("precmon main screen, idle server", default, measure([*precmon, "--url", url], args.seconds, env))
    for interval in INTERVALS:
        watch = [*precmon, "--url", url, "watch", "--refresh-s", interval]
        row("precmon watch (passive, live /slots)", f"{interval} s", measure(watch, args.seconds, env))
    with TimedServer(Behaviour(itl_s=0.004, prefill_s_per_token=0.0002)) as srv, tempfile.TemporaryDirectory() as tmp:
        spec = sweep_spec(srv.url, Path(tmp))
        argv_sweep = [*precmon, "--url", srv.url, "--sweep", str(spec), "--out", str(Path(tmp) / "res")]
        with contextlib.redirect_stderr(io.StringIO()):  # the fake's "connection reset" when precmon is stopped
            result = measure(argv_sweep, args.seconds, env, keys="s")
        row("precmon during a sweep (client included)", default, result)
    floor = [args.python, str(ROOT / "bench" / "textual_floor.py")]
    row("Textual alone: an app that never repaints", "-", measure(floor, args.seconds, env))
    for interval in INTERVALS:
        result = measure([*floor, "--interval", interval], args.seconds, env)
        row("Textual alone: the full screen repainted", f"{interval} s", result)
    if has_nvitop(args.python):
        for interval in INTERVALS:
            nvitop = [args.python, "-m", "nvitop", "--monitor", "full", "--interval", interval]
            row("nvitop --monitor full", f"{interval} s", measure(nvitop, args.seconds, env))
    else:
        print(f"  nvitop is not installed in {args.python} (pip install nvitop): its rows are n/a")
        for interval in INTERVALS:
            row("nvitop --monitor full", f"{interval} s", (None, "nvitop not installed"))
    fake.shutdown()
    write_doc(args, rows)
    return 0


def write_doc(args: argparse.Namespace, rows: list[dict[str, object]], **extra: object) -> None:
    doc = {
        "host": socket.gethostname(),
        "python": args.python,
        "seconds": args.seconds,
        "terminal": f"{COLS}x{ROWS}",
        "watched": "built-in fake llama-server" if not args.url else args.url,
        "rows": rows,
        **extra,
    }
    Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written: {args.json}")


Row = Callable[[str, str, tuple[float | None, str]], None]


def head_to_head(
    args: argparse.Namespace,
    precmon: list[str],
    url: str,
    env: dict[str, str],
    row: Row,
    rows: list[dict[str, object]],
    fake: FakeLlama,
) -> int:
    """`precmon watch` and nvitop at one interval, back to back, `args.pairs` rounds."""
    if not has_nvitop(args.python):
        print(f"nvitop is not installed in {args.python} (pip install nvitop): no head-to-head", file=sys.stderr)
        return 2
    programs = {
        "precmon watch (passive, live /slots)": [*precmon, "--url", url, "watch", "--refresh-s", args.interval],
        "nvitop --monitor full": [args.python, "-m", "nvitop", "--monitor", "full", "--interval", args.interval],
    }
    for rnd in range(args.pairs):
        order = list(programs.items()) if rnd % 2 == 0 else list(programs.items())[::-1]
        for name, argv in order:
            row(name, f"{args.interval} s", measure(argv, args.seconds, env))
            rows[-1]["round"] = rnd + 1
    fake.shutdown()
    summary: dict[str, float | None] = {}
    for name in programs:
        pcts = [r["cpu_pct_of_one_core"] for r in rows if r["program"] == name]
        measured = [p for p in pcts if isinstance(p, float)]
        summary[name] = sum(measured) / len(measured) if len(measured) == len(pcts) else None
        shown = "n/a" if summary[name] is None else f"{summary[name]:.2f}%"
        print(f"  mean over {args.pairs} rounds: {name:<38} {shown}")
    mine, theirs = summary.values()
    if mine is not None and theirs:
        print(f"  precmon watch / nvitop at {args.interval} s: {mine / theirs:.2f}x")
    write_doc(args, rows, pairs=args.pairs, mean_pct=summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
