"""`--help` says where precmon looks for a server without --url: the same ports discovery probes."""

from __future__ import annotations

import pytest

from precmon.cli import main
from precmon.cli.parser import build_parser
from precmon.servers.detect import USUAL_PORTS


def _help(*argv: str) -> str:
    parser = build_parser()
    for action in parser._subparsers._group_actions:  # the subcommand's own parser
        if argv and argv[0] in action.choices:
            return action.choices[argv[0]].format_help()
    return parser.format_help()


def test_watch_help_names_every_usual_port() -> None:
    text = " ".join(_help("watch").split())
    assert "default: the first server answering on a usual local port" in text
    for port in USUAL_PORTS:
        assert str(port) in text


def test_bench_still_requires_url_and_does_not_promise_discovery() -> None:
    text = " ".join(_help("bench").split())
    assert "usual local port" not in text


def test_every_command_help_exits_0(capsys) -> None:
    parser = build_parser()
    (sub,) = parser._subparsers._group_actions
    for argv in [["--help"], *([name, "--help"] for name in sub.choices)]:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0, argv
        assert "usage: precmon" in capsys.readouterr().out
