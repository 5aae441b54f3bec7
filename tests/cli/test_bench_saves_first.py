"""`precmon bench --json` writes what it measured before anything that can fail on odd data
(issue 11 #2): a server error body with `[/]` and terminal escapes, an error nobody foresaw in
the measuring code. And nothing it shows or stores holds a credential (#15)."""

from __future__ import annotations

import json

from tests.hostile.run import TINY, precmon
from tests.hostile.servers import SCRIPTS, SECRET, HostileServer


def test_markup_in_an_error_body_costs_neither_the_json_nor_the_exit_code(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["dies_after_decode"]) as srv:  # decode measures, then HTTP 500 "[/] ..."
        ran = precmon("bench", "--url", srv.url, "--server", "llamacpp", *TINY, "--json", str(out))
    assert ran.rc == 1, ran.err
    assert "Traceback" not in ran.text
    assert "\x1b" not in ran.text and "\x07" not in ran.text  # no raw escapes reach the terminal
    (v,) = json.loads(out.read_text())["variants"]
    assert [r["phase"] for r in v["runs"] if r["ok"]][:1] == ["decode"]
    assert v["metrics"]["decode_tok_s"] is not None
    assert f"results written to {out}" in ran.err


def test_an_unexpected_error_while_measuring_still_writes_the_json(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["odd_json"]) as srv:  # /v1/models as a list broke an adapter once
        ran = precmon("bench", "--url", srv.url, "--server", "llamacpp", *TINY, "--json", str(out))
    assert ran.rc in (0, 1) and "Traceback" not in ran.text, ran.err
    assert json.loads(out.read_text())["variants"][0]["label"]


def test_credentials_are_neither_shown_nor_stored(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["echo_auth"]) as srv:  # echoes "Authorization: Bearer <key>" in its 502 body
        url = srv.url.replace("http://", "http://user:pa55word@")
        ran = precmon(
            "bench", "--url", url, "--server", "llamacpp", "--api-key-env", "HOSTILE_KEY", *TINY, "--json", str(out)
        )
        assert srv.completions >= 1  # the key and the password were sent: only the copies are redacted
    assert ran.rc == 1, ran.err
    stored = out.read_text()
    for secret in (SECRET, "pa55word"):
        assert secret not in ran.text and secret not in stored
    assert "Traceback" not in ran.text


def test_an_unset_api_key_variable_is_a_usage_error():
    ran = precmon("bench", "--url", "http://127.0.0.1:1", "--api-key-env", "PRECMON_NO_SUCH_VAR_X")
    assert ran.rc == 2 and "PRECMON_NO_SUCH_VAR_X" in ran.err


def test_json_to_a_folder_is_refused_before_measuring(tmp_path):
    ran = precmon("bench", "--url", "http://127.0.0.1:1", "--json", str(tmp_path))
    assert ran.rc == 2 and "is a folder" in ran.err
