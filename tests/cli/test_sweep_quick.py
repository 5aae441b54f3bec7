"""`precmon sweep --quick`: the first try of a sweep file (a ladder's) runs --quick's small plan,
and a plan key the file sets itself still wins (docs/design.md §3)."""

from __future__ import annotations

from precmon.cli import main
from precmon.cli.commands import sweep_cmd
from precmon.core.settings import BenchSettings

SPEC = """
[defaults]
repeats = 5

[[variant]]
label = "F16"
precision = "fp16"
url = "http://127.0.0.1:18300"
"""


def test_quick_is_the_base_of_the_plan_and_the_files_keys_win(tmp_path, monkeypatch):
    (tmp_path / "s.toml").write_text(SPEC)
    plans = []
    monkeypatch.setattr(sweep_cmd, "run_headless", lambda spec, out, **_: plans.append(spec.variants[0].settings) or 0)
    assert main(["sweep", str(tmp_path / "s.toml"), "--headless", "--quick", "--out", str(tmp_path / "q")]) == 0
    assert main(["sweep", str(tmp_path / "s.toml"), "--headless", "--out", str(tmp_path / "full")]) == 0
    quick, full = plans
    small = BenchSettings.quick()
    assert (quick.prefill_tokens, quick.ttft_tokens, quick.output_tokens) == (
        small.prefill_tokens,
        small.ttft_tokens,
        small.output_tokens,
    )
    assert full.prefill_tokens == BenchSettings().prefill_tokens and full.ttft_tokens == 8192
    assert quick.repeats == full.repeats == 5  # the file's own key
