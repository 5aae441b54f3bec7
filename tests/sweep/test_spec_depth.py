"""The `depth` key (sweep file) and `--depth` (bench): lists of integers >= 0, 0 included."""

from __future__ import annotations

import pytest

from precmon.cli.common import settings_from_args
from precmon.cli.parser import build_parser
from precmon.sweep.spec import SpecError, parse_spec

SPEC = """\
[defaults]
url = "http://127.0.0.1:8080"
depth = {defaults}

[[variant]]
label = "F16"
precision = "fp16"
model = "tiny-F16"
{variant}
"""


def test_depth_in_defaults_and_per_variant():
    spec = parse_spec(SPEC.format(defaults="[0, 4096]", variant="depth = [16384]"))
    assert spec.variants[0].settings.depth == [16384]
    spec = parse_spec(SPEC.format(defaults="[0, 4096]", variant=""))
    assert spec.variants[0].settings.depth == [0, 4096]


@pytest.mark.parametrize("bad", ["[]", "[-1]", "[1.5]", "[true]", "4096", '["4096"]', "[100000000]"])
def test_a_bad_depth_names_the_key(bad):
    with pytest.raises(SpecError, match=r"\[defaults\] key 'depth'"):
        parse_spec(SPEC.format(defaults=bad, variant=""))


def test_depth_flag_parses_zero_and_reaches_the_settings():
    args = build_parser().parse_args(["bench", "--url", "http://127.0.0.1:1", "--depth", "0,4096,16384"])
    assert settings_from_args(args).depth == [0, 4096, 16384]
    assert settings_from_args(build_parser().parse_args(["bench", "--url", "http://127.0.0.1:1"])).depth == []


@pytest.mark.parametrize("bad", ["-1", "0,x", ""])
def test_a_bad_depth_flag_is_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["bench", "--url", "http://127.0.0.1:1", "--depth", bad])
    assert exc.value.code == 2 and "argument --depth" in capsys.readouterr().err


def test_depth_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    assert "--depth D,D,..." in capsys.readouterr().out
