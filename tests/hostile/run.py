"""Running `python -m precmon.cli` as a user would: a subprocess, its output and exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from tests.hostile.servers import SECRET

TINY = [
    "--output-tokens", "4", "--decode-prompt-tokens", "8", "--prefill-tokens", "16", "--ttft-tokens", "16",
    "--repeats", "1", "--warmup", "0", "--idle-s", "0", "--no-power", "--timeout", "1",
]  # fmt: skip


@dataclass
class Ran:
    rc: int | None  # None: still running at the deadline (killed)
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def precmon(*argv: str, timeout_s: float = 30.0, stdin: str | None = None) -> Ran:
    """`precmon ARGV` in a subprocess with HOSTILE_KEY=SECRET in its environment."""
    env = dict(os.environ, HOSTILE_KEY=SECRET, COLUMNS="200")
    try:
        p = subprocess.run(
            [sys.executable, "-m", "precmon.cli", *argv],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            input=stdin,
            errors="replace",
        )
    except subprocess.TimeoutExpired as exc:

        def s(b: object) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else str(b or "")

        return Ran(None, s(exc.stdout), s(exc.stderr))
    return Ran(p.returncode, p.stdout, p.stderr)


def assert_clean(ran: Ran, code: int | tuple[int, ...]) -> None:
    """The promises every command keeps, whatever it was fed."""
    assert ran.rc is not None, f"still running at the deadline: {ran.err[-500:]}"
    assert "Traceback" not in ran.text, ran.text[-2000:]
    assert "internal error" not in ran.err, ran.err[-1000:]
    assert "\x1b" not in ran.text and "\x07" not in ran.text, "a raw terminal escape reached the output"
    assert SECRET not in ran.text and "pa55word" not in ran.text, "a credential reached the output"
    assert ran.rc in (code if isinstance(code, tuple) else (code,)), ran.err[-1500:]
