"""Exit codes are defined once (issue 18): `precmon.exit_codes.ExitCode`, with the values of
docs/design.md §3, and no command module spells them as bare numbers."""

from __future__ import annotations

import re
from pathlib import Path

from precmon.exit_codes import ExitCode

CLI = Path(__file__).resolve().parents[2] / "src" / "precmon" / "cli"


def test_values_are_the_documented_ones():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 130]
    assert [c.name for c in ExitCode] == ["OK", "FAILED", "USAGE", "INTERRUPTED"]


def test_no_command_module_spells_an_exit_code_as_a_number():
    bare = re.compile(r"(return|exit\(|fail\(.*,)\s*(1|2|130)\)?\s*$|EXIT_\w+\s*=|sys\.exit\(\s*\d")
    offenders = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(CLI.glob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert offenders == []
