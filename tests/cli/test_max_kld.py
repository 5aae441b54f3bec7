"""`--max-kld` (issue 29 item 4): one row of the settings table (core/settings.py REPORT), so every
command that measures or reports takes the flag, a sweep file takes the key in [defaults], the
loader checks it, the results keep it, and `report` / the TUI's sweep table judge by it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from precmon import api
from precmon.cli import parser as cli_parser
from precmon.cli.parser import build_parser
from precmon.core import settings as plan
from precmon.core.schema import SCHEMA, ResultsDoc
from precmon.report.analysis import pick
from precmon.report.analysis.quality_bands import EDGES, SMALL
from precmon.report.load import validate
from precmon.report.model import DocumentError
from precmon.report.sections import build_report
from precmon.sweep.spec import SpecError, parse_spec
from tests.hostile.run import TINY, precmon
from tests.hostile.servers import SCRIPTS, HostileServer

ROW = plan.BY_NAME["max_kld"]
CPU_DOC = Path(__file__).resolve().parents[1] / "report" / "data" / "cpu_tiny.json"
SWEEP = '[defaults]\nurl = "http://127.0.0.1:1"\n{extra}\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nmodel = "m"\n'
# the commands that take it: the TUI (no command), bench, sweep, demo, report
COMMANDS = {
    "tui": [],
    "bench": ["bench", "--url", "http://127.0.0.1:1"],
    "sweep": ["sweep", "s.toml"],
    "demo": ["demo"],
    "report": ["report", "r.json"],
}


def scored(doc: dict[str, Any]) -> dict[str, Any]:
    """cpu_tiny with quality: F16 the baseline, Q8_0 near-lossless, Q4_K_M small (KL 0.03)."""
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}
    for v in doc["variants"]:
        kld, top1 = scores[v["label"]]
        v["metrics"].update(quality_kld_mean=kld, quality_top1_agree=top1)
        v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20, "baseline_topk_mass": 0.97}
    return doc


def cpu_doc() -> dict[str, Any]:
    return scored(json.loads(CPU_DOC.read_text(encoding="utf-8")))


def test_the_default_is_the_small_bands_edge_and_said_once():
    assert ROW.default == pick.DEFAULT_MAX_KLD_NATS == next(kl for name, kl, _ in EDGES if name == SMALL)
    assert "0.05" not in Path(cli_parser.__file__).read_text(encoding="utf-8")  # help comes from the row


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_that_measures_or_reports_takes_it_with_the_rows_default_in_its_help(command):
    p = build_parser()
    argv = COMMANDS[command]
    assert p.parse_args([*argv, "--max-kld", "0.2"]).max_kld == 0.2
    assert p.parse_args(argv).max_kld is None  # not given: the file's, else the row's default
    sub = p if not argv else p._subparsers._group_actions[0].choices[argv[0]]  # type: ignore[union-attr]
    (action,) = [a for a in sub._actions if a.dest == "max_kld"]
    assert "(default 0.05 nats;" in action.help and action.metavar == "NATS"


@pytest.mark.parametrize("command", ["sweep", "report"])
def test_given_before_the_command_it_is_kept(command):
    args = build_parser().parse_args(["--max-kld", "0.02", *COMMANDS[command]])
    assert args.max_kld == 0.02


@pytest.mark.parametrize(("text", "message"), [("0", "expected a positive number of nats, got 0.0"),
                                               ("nan", "expected a finite number of nats, got nan"),
                                               ("x", "expected a number of nats, got 'x'")])  # fmt: skip
def test_a_bad_value_is_one_line_naming_the_flag(text, message, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*COMMANDS["sweep"], "--max-kld", text])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        f"precmon sweep: error: argument --max-kld: {message} (see precmon sweep --help)"
    ]


def test_the_sweep_file_takes_it_in_defaults_only_and_the_results_keep_it():
    spec = parse_spec(SWEEP.format(extra="max_kld = 0.1"))
    assert spec.report == {"max_kld": 0.1} and spec.settings_dict()["max_kld"] == 0.1
    assert "max_kld" not in parse_spec(SWEEP.format(extra="")).settings_dict()  # not given: not stored
    with pytest.raises(
        SpecError, match=r"^<sweep>:3: \[defaults\] key 'max_kld': expected a positive number of nats, got 0$"
    ):
        parse_spec(SWEEP.format(extra="max_kld = 0"))
    with pytest.raises(SpecError, match="variant #1 key 'max_kld': belongs in \\[defaults\\]"):
        parse_spec(SWEEP.format(extra="") + "max_kld = 0.1\n")


def test_the_sweep_flag_overrides_the_files_key(tmp_path, capsys):
    from precmon.cli.commands import sweep_cmd

    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP.format(extra="max_kld = 0.1\nquality = true"), encoding="utf-8")
    args = build_parser().parse_args(["sweep", str(spec), "--check", "--max-kld", "0.3"])
    assert sweep_cmd.run(args) == 0
    assert "the pick within mean KL ≤ 0.3 nats" in capsys.readouterr().out


def test_the_loader_checks_it():
    validate({"schema": SCHEMA, "settings": {"max_kld": 0.1}, "variants": []}, "r.json")
    for bad, why in ((0, "expected a positive number of nats, got 0"), ("x", 'expected a number, got "x"')):
        with pytest.raises(DocumentError) as err:
            validate({"schema": SCHEMA, "settings": {"max_kld": bad}, "variants": []}, "r.json")
        assert str(err.value) == f"r.json: settings.max_kld: {why}"


def test_report_judges_by_the_files_budget_and_its_flag_overrides_it():
    doc = validate(cpu_doc(), "cpu_tiny.json")
    assert build_report(doc).pick.startswith("Pick Q4_K_M: fastest decode within KL ≤ 0.05")
    doc.settings["max_kld"] = 0.01  # the sweep's --max-kld / max_kld
    assert build_report(doc).pick.startswith("Pick Q8_0: fastest decode within KL ≤ 0.01")
    assert build_report(doc, max_kld=0.1).pick.startswith("Pick Q4_K_M: fastest decode within KL ≤ 0.1")


def test_bench_keeps_it_in_the_results(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["good"]) as srv:
        ran = precmon("bench", "--url", srv.url, *TINY, "--max-kld", "0.07", "--json", str(out))
    assert ran.rc in (0, 1), ran.err
    settings = json.loads(out.read_text())["settings"]
    assert settings["max_kld"] == 0.07 and settings["repeats"] == 1


class _Power:
    def measuring_meter(self) -> None:
        return None

    def host(self) -> dict[str, Any]:
        return {}

    def wait_ready(self) -> bool:
        return True


def test_the_tuis_flag_reaches_what_it_shows_and_saves(tmp_path, monkeypatch):
    """`precmon --max-kld X`: the live document (the sweep table's pick) and every sweep the TUI
    runs keep it, over the sweep file's."""
    from precmon.tui.app import PrecmonApp
    from precmon.tui.config import TuiConfig
    from precmon.tui.messages import SweepPlanned
    from precmon.tui.workers import measure_worker as mw

    app = PrecmonApp(TuiConfig(report={"max_kld": 0.02}, poll_server=False))
    assert app.live.doc.settings == {"max_kld": 0.02}
    seen: list[dict[str, Any]] = []

    def sweep(spec, *, out, **kw: Any) -> api.Ended:
        seen.append(spec.settings_dict())
        return api.Ended(ResultsDoc(), tmp_path / "results.json", out / "journal.jsonl", False, None)

    monkeypatch.setattr(mw.api, "sweep", sweep)
    posted: list[Any] = []
    worker = mw.MeasureWorker(posted.append, app.quitting, _Power(), lambda: tmp_path, report={"max_kld": 0.02})  # type: ignore[arg-type]
    worker._sweep(app.server_config, parse_spec(SWEEP.format(extra="max_kld = 0.1")), app._stop)
    assert seen[0]["max_kld"] == 0.02
    planned = next(m for m in posted if isinstance(m, SweepPlanned))
    assert planned.spec.settings_dict()["max_kld"] == 0.02
