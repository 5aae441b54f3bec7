"""`precmon demo` when its server cannot be made (docs/design.md §3, §9): a failed llama-quantize or
a cache it cannot write (a full disk) is the one-line `demo could not start its server` and exit 1,
never "internal error (please report it)"."""

from __future__ import annotations

import errno

import pytest

from precmon.cli import main
from precmon.cli.commands import demo_cmd
from precmon.sweep.ladder import LadderError
from precmon.testbed.llama_build import BuildError

FAULTS = [
    LadderError("llama-quantize Q8_0 failed (exit 1): llama_model_quantize: failed to write: No space left on device"),
    OSError(errno.ENOSPC, "No space left on device", "/home/u/.cache/precmon/models/smollm2-r2"),
    PermissionError(errno.EACCES, "Permission denied", "/home/u/.cache/precmon"),
    BuildError("cmake failed"),
]


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: type(f).__name__)
def test_a_server_that_cannot_be_made_is_one_line_and_exit_1(fault, monkeypatch, capsys):
    def prepare(port: int = 0, **_: object) -> None:
        raise fault

    monkeypatch.setattr(demo_cmd, "prepare", prepare)
    assert main(["demo", "--headless"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("precmon: demo could not start its server: "), err
    assert "internal error" not in err[0]
    if isinstance(fault, OSError):
        assert err[0].endswith(f"{fault.filename}: {fault.strerror}")
