"""`precmon sweep SPEC.toml`: validate, then run headless (or in the TUI).

Whichever way the sweep runs (the TUI, headless by choice, headless because there is no terminal
or because of `--resume`), `--json FILE` gets a copy of results.json afterwards, also when the
sweep was interrupted or ended on an error: the runner has written every variant to --out by then.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from precmon import api
from precmon.cli import preflight_out, signals
from precmon.cli.common import UsageError, host_for, open_meter, power_from, sampler_stats
from precmon.cli.output import fail, say
from precmon.cli.parser import url_arg
from precmon.cli.results_out import copy_results, show_table
from precmon.core import settings as plan_settings
from precmon.core.metric_keys import KEY
from precmon.core.schema import Preflight, RecordError, ResultsDoc, variant_from_json
from precmon.exit_codes import ExitCode
from precmon.file_args import input_clash, same_file
from precmon.measure.quality.reference import FILE_NAME as QUALITY_REF
from precmon.measure.results import ResultsError, load_results, output_problem
from precmon.sweep import folder_lock
from precmon.sweep.events import Log, VariantFinished, VariantStarted
from precmon.sweep.events import Progress as ProgressEvent
from precmon.sweep.launched import earlier_sweep
from precmon.sweep.resume import PlanChanged, resume_problem
from precmon.sweep.spec import SpecError, SweepSpec, load_spec
from precmon.sweep.store import FolderHasResults, ResultStore, out_dir_problem
from precmon.untrusted import markup, redact, visible


def run(args: argparse.Namespace) -> int:
    spec = _spec_for(args)
    if isinstance(spec, str):
        return fail(spec, ExitCode.USAGE)
    if args.check:
        _print_check(args.spec, spec)
        return ExitCode.OK
    problem = _flags_problem(args)
    if problem:
        return fail(problem, ExitCode.USAGE)
    out_dir = Path(args.out) if args.out else api.default_sweep_dir()
    results = out_dir / "results.json"
    problem = _out_problem(args, out_dir, results) or _resume_problem(args, spec, out_dir, results)
    if problem:
        return fail(problem, ExitCode.USAGE)
    preflight, strict_code = preflight_out.checked([v.url for v in spec.variants if v.url], args.strict)
    if strict_code is not None:
        return strict_code
    code: int = ExitCode.FAILED
    where = Written(results)
    try:
        code = _sweep(args, spec, out_dir, where, preflight)
    finally:  # also after Ctrl-C or an error: what --out holds is what was measured
        if args.json and not where.refused:
            code = _copy_json(where.results, args.json, code)
    return code


def _spec_for(args: argparse.Namespace) -> SweepSpec | str:
    """The sweep file with the command line's plan, report and power flags over it; or why it
    cannot be run (its own error, or a variant's URL that nothing can connect to)."""
    try:  # --quick: its plan is the base, the file's own plan keys are applied over it
        spec = load_spec(Path(args.spec), base=plan_settings.BenchSettings.quick() if args.quick else None)
    except SpecError as exc:
        return str(exc)
    spec.report |= plan_settings.report_values(vars(args))  # --max-kld over the file's max_kld
    spec.power_from = power_from(args, spec.power_from)  # --power-from beside the file's power_from
    for v in spec.variants:  # a URL nothing can connect to is the file's error, not a failed measurement
        try:
            url_arg(str(v.url))
        except argparse.ArgumentTypeError as exc:
            return f"{args.spec}: variant {v.label!r}: url: {exc}"
    return spec


def _print_check(path: str, spec: SweepSpec) -> None:
    """`--check`: the variants the file plans and, when it scores quality, how."""
    labels = ", ".join(f"{v.label} ({v.strategy})" for v in spec.variants)
    print(visible(redact(f"{path}: ok, {len(spec.variants)} variants: {labels}")))
    if spec.scores_quality:
        on = ", ".join(v.label for v in spec.variants if v.quality is not None)
        q = spec.quality
        line = f"quality: {on}; baseline {spec.baseline_label} (measured first), P={q.positions}, K={q.top_k}"
        kld = plan_settings.judged_by("max_kld", spec.report)
        print(visible(redact(f"{line}, text {q.text_name}; the pick within mean KL ≤ {kld:g} nats")))


def _flags_problem(args: argparse.Namespace) -> str | None:
    """Flags that do not go together, and a --json file that cannot be written: found out now,
    not after the whole sweep."""
    if args.resume and not args.out:
        return "--resume needs --out DIR (the folder of the sweep to continue)"
    if args.replan and not args.resume:
        return "--replan goes with --resume (what a resumed sweep does with a changed plan)"
    if args.json:
        problem = output_problem(args.json) or input_clash(args.json, [("the sweep file", args.spec)])
        if problem:
            return f"--json {args.json}: {problem}"
    return None


def _out_problem(args: argparse.Namespace, out_dir: Path, results: Path) -> str | None:
    """Why the results folder cannot take this sweep (found out now, not when the first variant
    is measured), or why --json would overwrite one of its files."""
    problem = out_dir_problem(out_dir)
    if problem:
        return f"--out {out_dir}: {problem}"
    if busy := folder_lock.holder(out_dir):  # one sweep per results folder
        return f"--out {busy}"
    if args.json and (problem := input_clash(args.json, [("", out_dir / QUALITY_REF)])):
        return f"--json {args.json}: {problem} (the sweep's quality reference)"
    if args.json and args.json != "-" and same_file(Path(args.json), out_dir / "journal.jsonl"):
        return f"--json {args.json}: is the sweep's journal (every run, as it lands): choose another file"
    return None


def _resume_problem(args: argparse.Namespace, spec: SweepSpec, out_dir: Path, results: Path) -> str | None:
    """Why the sweep cannot start or continue in `out_dir`: results there without --resume, or
    results that --resume cannot read back or that another plan produced."""
    if not args.resume and (earlier := earlier_sweep(out_dir, say)):
        return f"--out {out_dir}: {earlier}: add --resume to continue that sweep, or choose another --out"
    if args.resume and (results.exists() or results.is_symlink()):
        problem = _unresumable(results)
        if problem:
            return f"--resume: {results} cannot be continued: {problem}"
    if args.resume:  # the same job, or said now
        return resume_problem(spec, out_dir, args.replan)
    return None


def _sweep(args: argparse.Namespace, spec: SweepSpec, out_dir: Path, where: Written, preflight: Preflight) -> int:
    """Run the sweep in the TUI, or headless when asked, on --resume, or with no terminal."""
    quiet = args.json == "-"  # `--json -`: stdout holds only the JSON, the table goes to stderr
    if args.headless:
        return run_headless(
            spec,
            out_dir,
            resume=args.resume,
            replan=args.replan,
            where=where,
            table_to_stderr=quiet,
            preflight=preflight,
        )
    if args.resume:
        say("precmon: --resume runs headless (the TUI always sweeps from the start)")
        return run_headless(
            spec, out_dir, resume=True, replan=args.replan, where=where, table_to_stderr=quiet, preflight=preflight
        )
    if not sys.stdout.isatty():
        say("precmon: no terminal: running the sweep headless")
        return run_headless(spec, out_dir, where=where, table_to_stderr=quiet, preflight=preflight)
    # imported here, not at the top: the headless path never loads textual (tests/test_layers.py)
    from precmon.cli.commands.tui_cmd import run_sweep_app

    return run_sweep_app(spec, out_dir)


def _copy_json(results: Path, dest: str, code: int) -> int:
    """Copy results.json to --json and return the exit code after it: FAILED if the copy failed
    (unless the sweep was interrupted), INTERRUPTED if a signal waited for the copy."""
    with signals.holding() as held:
        problem = copy_results(results, dest)
    if problem:
        code = fail(problem, ExitCode.FAILED if code != ExitCode.INTERRUPTED else code)
    if held.held:  # a signal waited for the copy: the user asked to stop
        code = ExitCode.INTERRUPTED
    return code


def _unresumable(results: Path) -> str | None:
    """Why the results file of an earlier sweep cannot be read back (a folder, not JSON, too
    deeply nested, a variant that is not one); None if it can."""
    try:
        variants = load_results(results)["variants"]
        if not isinstance(variants, list):
            return "'variants' is not a list"
        for i, v in enumerate(variants):
            variant_from_json(v, f"variants[{i}]")
    except OSError as exc:
        return str(exc.strerror or exc)
    except RecursionError:
        return "nested too deeply to be a results file"
    except (ResultsError, RecordError, KeyError, TypeError, ValueError, AttributeError) as exc:
        return str(exc)
    return None


@dataclass
class Written:
    """Where the sweep's results.json is: --out, or the rescue folder after a write fault;
    `refused`: the sweep never started (the folder in use, or a changed plan on --resume)."""

    results: Path
    refused: bool = False


def _sweep_progress(err: Console) -> tuple[Progress, Callable[[object], None]]:
    """The headless sweep's progress bar and the event handler that moves it and prints a line
    per finished variant and log entry (every text from files and servers made safe)."""
    progress = Progress(
        TextColumn("{task.fields[variant]}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=False,
    )
    task = progress.add_task("", total=1, variant="[bold]sweep[/]")

    def shown(text: object) -> str:  # labels, errors and server logs come from files and servers
        return markup(redact(str(text)), limit=200)

    def on_event(ev: object) -> None:
        if isinstance(ev, VariantStarted):
            progress.update(
                task,
                completed=0,
                total=1,
                variant=f"[bold]{shown(f'[{ev.index + 1}/{ev.total}] {ev.label}')}[/]",
                description=shown(f"starting ({ev.strategy})"),
            )
        elif isinstance(ev, ProgressEvent):
            progress.update(task, completed=ev.done, total=max(ev.total, 1), description=shown(ev.text))
        elif isinstance(ev, VariantFinished):
            r = ev.result
            dec = r.metrics.get(KEY.decode_tok_s)
            line = f"{r.label}: {r.status}"
            if isinstance(dec, (int, float)) and dec:
                line += f", decode {dec:.1f} tok/s"
            if r.status == "failed" and r.errors:
                line += f" — {r.errors[0]}"
            progress.console.print(shown(line))
        elif isinstance(ev, Log):
            progress.console.print(f"[dim]{shown(ev.text)}[/]")

    return progress, on_event


def run_headless(
    spec: SweepSpec,
    out_dir: Path,
    resume: bool = False,
    replan: bool = False,
    meter: Any = None,
    where: Written | None = None,
    table_to_stderr: bool = False,
    preflight: Preflight | None = None,
) -> int:
    """The sweep without the TUI; `preflight`: the box as the caller checked and showed it (None:
    checked and shown here, before anything is measured)."""
    if preflight is None:
        preflight, _ = preflight_out.checked([v.url for v in spec.variants if v.url], strict=False)
    err = Console(stderr=True)
    own_meter = meter is None
    if own_meter:
        try:
            meter, note = open_meter(True, spec.power_from)
        except UsageError as exc:
            return fail(str(exc), ExitCode.USAGE)
        if note:
            err.print(f"[yellow]power:[/] {markup(note)}")
    progress, on_event = _sweep_progress(err)
    started = time.monotonic()
    stores: list[ResultStore] = []
    order = [v.label for v in spec.variants]
    try:
        with progress:
            ended = api.sweep(
                spec,
                out=out_dir,
                resume=resume,
                replan=replan,
                meter=meter,
                host=host_for(meter),
                on_event=on_event,
                store_ready=stores.append,
                preflight=preflight,
            )
        with signals.holding():
            stats = sampler_stats(meter, time.monotonic() - started)
            if stats:
                stores[0].host.sampler = stats
                stores[0].write(order)
    except (folder_lock.FolderBusy, FolderHasResults, PlanChanged) as exc:  # refused: nothing measured or changed
        if where is not None:
            where.refused = True
        line = {PlanChanged: str(exc), FolderHasResults: f"--out {out_dir}: {exc}"}.get(type(exc), f"--out {exc}")
        return fail(line, ExitCode.USAGE)
    finally:
        if own_meter and meter is not None:
            meter.stop()
    if where is not None:
        where.results = ended.results_path
    show_table(ended.doc, to_stderr=table_to_stderr)  # the pick within the sweep's max_kld under it
    return _exit_code(ended, order, spec, out_dir)


def _exit_code(ended: api.Ended, order: list[str], spec: SweepSpec, out_dir: Path) -> int:
    """Where the results are, what is not ok, and the exit code that tells a script (§3)."""
    say(f"results: {ended.results_path} (journal: {ended.journal_path})")
    if ended.interrupted:
        return ExitCode.INTERRUPTED
    if ended.rescued_to is not None:  # every run is kept, but not where --out said: a script must notice
        say(f"precmon sweep: --out {out_dir} failed mid-sweep; the results are in {ended.rescued_to}")
        return ExitCode.FAILED
    doc: ResultsDoc = ended.doc
    planned = [v for v in doc.variants if v.label in order]
    unplanned = [f"{v.label} ({v.status})" for v in doc.variants if v not in planned]
    if unplanned:  # an earlier run's variant taken out of the sweep file: kept, never measured again
        say(f"kept as they were, not in {spec.path or 'the sweep file'}: {', '.join(unplanned)}")
    not_ok = [f"{v.label} {v.status}" for v in planned if v.status != "ok"]
    if not_ok:  # every variant is saved; exit 1 tells a script that not all of them measured cleanly
        say(f"not ok: {', '.join(not_ok)} (precmon sweep --resume measures them again)")
    return ExitCode.OK if planned and not not_ok else ExitCode.FAILED
