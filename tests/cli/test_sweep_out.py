"""`sweep --out` and `--json` are checked before anything is measured (issue 11 #8, CLI side):
exit 2 with one line naming the flag, instead of a traceback when the first variant lands."""

from __future__ import annotations

import pytest

from tests.hostile.files import SPEC_HEAD, variant
from tests.hostile.run import precmon


@pytest.mark.parametrize(
    ("flag", "where", "why"),
    [
        ("--out", "a_file", "is not a folder"),
        ("--out", "a_file/sub", "a_file is not a folder"),
        ("--json", "no_such_folder/x.json", "does not exist"),
        ("--json", ".", "is a folder"),
    ],
)
def test_unusable_output_is_a_usage_error(tmp_path, flag, where, why):
    (tmp_path / "a_file").write_text("x")
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC_HEAD + variant("A", "http://127.0.0.1:9"))
    args = ["--out", str(tmp_path / "out")] if flag == "--json" else []
    ran = precmon("sweep", str(spec), "--headless", *args, flag, str(tmp_path / where))
    assert ran.rc == 2, ran.err
    assert flag in ran.err and why in ran.err and "Traceback" not in ran.text
    assert not (tmp_path / "out").exists()  # nothing started
