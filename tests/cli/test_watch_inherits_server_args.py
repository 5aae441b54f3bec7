"""`precmon --url X watch` means `precmon watch --url X`: the subcommand's defaults do not overwrite the top level's."""

from __future__ import annotations

from precmon.cli.parser import build_parser


def _parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_top_level_server_flags_reach_watch() -> None:
    a = _parse("--url", "http://127.0.0.1:8080", "--model", "m", "--server", "llamacpp", "watch")
    assert (a.url, a.model, a.server) == ("http://127.0.0.1:8080", "m", "llamacpp")


def test_watch_own_flags_and_defaults() -> None:
    a = _parse("watch", "--url", "http://127.0.0.1:9000")
    assert a.url == "http://127.0.0.1:9000" and a.server == "auto" and a.model is None
    a = _parse("watch")
    assert a.url is None and a.server == "auto" and a.api_key_env is None
    # the subcommand's own flag wins over the top level's
    assert _parse("--url", "http://127.0.0.1:1", "watch", "--url", "http://127.0.0.1:2").url == "http://127.0.0.1:2"
