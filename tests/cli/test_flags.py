"""Every numeric flag and every --url is checked by argparse: a bad value is exit 2 with one line
naming the flag (issue 11 #11, #17), never a traceback or a refused connection."""

from __future__ import annotations

import pytest

from precmon.cli.common import settings_from_args
from precmon.cli.parser import build_parser

BENCH = ["bench", "--url", "http://127.0.0.1:1"]
CASES = [
    (BENCH + ["--timeout", "nan"], "--timeout"),
    (BENCH + ["--timeout", "inf"], "--timeout"),
    (BENCH + ["--timeout", "0"], "--timeout"),
    (BENCH + ["--timeout", "-1"], "--timeout"),
    (BENCH + ["--timeout", "soon"], "--timeout"),
    (BENCH + ["--idle-s", "nan"], "--idle-s"),
    (BENCH + ["--idle-s", "-inf"], "--idle-s"),
    (BENCH + ["--idle-s", "-0.5"], "--idle-s"),
    (BENCH + ["--repeats", "0"], "--repeats"),
    (BENCH + ["--repeats", "1e3"], "--repeats"),
    (BENCH + ["--warmup", "-1"], "--warmup"),
    (BENCH + ["--target-ci", "nan"], "--target-ci"),
    (BENCH + ["--target-ci", "0"], "--target-ci"),
    (BENCH + ["--target-ci", "-5"], "--target-ci"),
    (BENCH + ["--target-ci", "101"], "--target-ci"),
    (BENCH + ["--target-ci", "5%"], "--target-ci"),
    (BENCH + ["--max-repeats", "0"], "--max-repeats"),
    (BENCH + ["--max-repeats", "-3"], "--max-repeats"),
    (BENCH + ["--max-repeats", "nan"], "--max-repeats"),
    (BENCH + ["--output-tokens", "1"], "--output-tokens"),
    (BENCH + ["--prefill-tokens", "512,-1"], "--prefill-tokens"),
    (BENCH + ["--concurrency", "nan"], "--concurrency"),
    (["report", "r.json", "--hours-per-day", "nan"], "--hours-per-day"),
    (["report", "r.json", "--hours-per-day", "25"], "--hours-per-day"),
    (["report", "r.json", "--hours-per-day", "0"], "--hours-per-day"),
    (["report", "r.json", "--price-per-kwh", "inf"], "--price-per-kwh"),
    (["report", "r.json", "--price-per-kwh", "-0.1"], "--price-per-kwh"),
    (["report", "r.json", "--bandwidth-gbs", "nan"], "--bandwidth-gbs"),
    (["report", "r.json", "--bandwidth-gbs", "0"], "--bandwidth-gbs"),
    (["demo", "--port", "70000"], "--port"),
    (["demo", "--port", "-1"], "--port"),
    (["bench", "--url", "http://[bad"], "--url"),
    (["bench", "--url", "http://127.0.0.1:99999"], "--url"),
    (["bench", "--url", "http://"], "--url"),
    (["bench", "--url", "ftp://127.0.0.1:8080"], "--url"),
    (["bench", "--url", "http://127.0.0.1:8080/\x1b]0;x\x07"], "--url"),
    (["watch", "--url", "http://[::1"], "--url"),
    (["doctor", "--url", "http://[bad"], "--url"),
    (["--url", "127.0.0.1:8080"], "--url"),
]


@pytest.mark.parametrize(("argv", "flag"), CASES, ids=[" ".join(a[3:] or a) for a, _ in CASES])
def test_bad_value_is_a_usage_error_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err, err
    assert "Traceback" not in err and "\x1b" not in err


def test_good_values_parse():
    args = build_parser().parse_args(BENCH + ["--timeout", "0.5", "--idle-s", "0", "--prefill-tokens", "16,32"])
    assert (args.timeout, args.idle_s, args.prefill_tokens) == (0.5, 0.0, [16, 32])
    r = build_parser().parse_args(["report", "r.json", "--hours-per-day", "8", "--price-per-kwh", "0"])
    assert (r.hours_per_day, r.price_per_kwh) == (8.0, 0.0)


def test_url_keeps_its_credentials_for_use_and_hides_them_in_the_error(capsys):
    url = "http://user:pa55word@127.0.0.1:8080"
    assert build_parser().parse_args(["bench", "--url", url]).url == url  # the requests need them
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--url", "http://user:pa55word@[bad"])
    assert "pa55word" not in capsys.readouterr().err


def test_adaptive_repeat_flags_reach_the_plan():
    plain = settings_from_args(build_parser().parse_args(BENCH))
    assert (plain.target_ci_pct, plain.max_repeats) == (None, 10)  # default: fixed repeats
    s = settings_from_args(build_parser().parse_args(BENCH + ["--target-ci", "2.5", "--max-repeats", "7"]))
    assert (s.target_ci_pct, s.max_repeats) == (2.5, 7)
