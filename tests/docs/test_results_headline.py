"""docs/results/README.md's headline table is the one scripts/results_headline.py makes from the results
file it names: a reader's first table cannot drift from the measurement it quotes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "docs" / "results" / "README.md"
SCRIPT = ROOT / "scripts" / "results_headline.py"


def _named_results() -> Path:
    m = re.search(r"^From `([^`]+\.json)`", README.read_text(), flags=re.M)
    assert m, "the headline block names no results file"
    return ROOT / m.group(1)


def test_the_headline_is_generated_from_the_results_it_names() -> None:
    results = _named_results()
    assert results.is_file(), results
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(results), "--readme", str(README), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_stale_headline_is_caught(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| Decode (tok/s) | 169.3", "| Decode (tok/s) | 179.3", 1))
    assert stale.read_text() != README.read_text(), "the test's edit did not apply"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(_named_results()), "--readme", str(stale), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "differs" in proc.stdout
