"""docs/results/README.md's claims table is the one scripts/results_claims.py makes from the results
it names: the guide's claims, row by row, against the H200 ladder, cannot drift from the measurement."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "docs" / "results" / "README.md"
SCRIPT = ROOT / "scripts" / "results_claims.py"
sys.path.insert(0, str(ROOT / "scripts"))

import results_claims  # noqa: E402


def _named() -> list[str]:
    block = README.read_text().split(results_claims.BEGIN, 1)[1]
    m = re.match(r"\s*From `([^`]+\.json)`(?: and `([^`]+\.json)`)?", block)
    assert m, "the claims block names no results file"
    return [str(ROOT / m.group(1))] + (["--llama-bench", str(ROOT / m.group(2))] if m.group(2) else [])


def _check(readme: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *_named(), "--readme", str(readme), "--check"], capture_output=True, text=True
    )


def test_the_claims_table_is_generated_from_the_results_it_names() -> None:
    proc = _check(README)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_stale_claims_table_is_caught(tmp_path: Path) -> None:
    text = README.read_text()
    block = text.split(results_claims.BEGIN, 1)[1].split(results_claims.END, 1)[0]
    edited = re.sub(r"\d+\.\d\d×", "9.99×", block, count=1)
    assert edited != block, "the test's edit did not apply"
    stale = tmp_path / "README.md"
    stale.write_text(text.replace(block, edited))
    proc = _check(stale)
    assert proc.returncode == 1 and "differs" in proc.stdout


def test_every_claim_has_a_row_and_the_gpu_ladder_answers_the_decode_claims() -> None:
    table = results_claims.claims_table(Path(_named()[0]), None)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(results_claims.CLAIMS)
    decode = {c.precision: r for c, r in zip(results_claims.CLAIMS, rows, strict=True) if c.kind == "decode"}
    assert "not measured" in decode["fp8"]  # no FP8 serving path on that machine: said, not invented
    # the speed-up and each side's share of the bandwidth limit (precmon's roofline)
    assert re.search(r"NVFP4: \d\.\d\d× \(.*\) \| F16 \d+% → NVFP4 \d+% \|", decode["nvfp4"]), decode["nvfp4"]


def test_verdicts_read_the_claimed_range() -> None:
    claim = results_claims.Claim("x", "decode", "int4", 2.5, 3.5)
    assert results_claims._within(3.0, claim) == "within the claim"
    assert results_claims._within(2.3, claim) == "near the claim"  # 8% below the nearer end
    assert results_claims._within(1.3, claim) == "outside the claim"
    less = results_claims.Claim("x", "power", "int4", -0.30, -0.20)
    assert results_claims._within(-0.27, less) == "within the claim"
    assert results_claims._within(-0.05, less) == "outside the claim"
