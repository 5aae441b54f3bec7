"""Results that survive anything: an append-only journal plus an atomically rewritten JSON.

Each run is appended to `journal.jsonl` (flushed and fsynced) the moment it lands; after each
variant `results.json` is rewritten atomically. A crash, a kill or Ctrl-C leaves every measured
run on disk; `--resume` reads `results.json` back, adds what only the journal holds (a variant
journaled just before a crash, the runs of one cut short), and skips the variants whose status is ok.

One sweep per folder: `held()` takes the folder's lock (sweep/folder_lock.py) for the length of a
sweep, before anything in it changes; a second writer is refused with who holds it and since when.
A fresh sweep (not `--resume`) is refused a folder that holds an earlier one's results or
journal (`earlier_results`, checked by the runner under the lock: `FolderHasResults`): it would
rewrite that `results.json` with its own variants only and append its runs to that journal, where
a later `--resume` would read both as one sweep.

When `--out` fails mid-sweep (disk full, read-only, the folder deleted) the sweep does not end:
everything journaled so far and everything after goes to a rescue folder (see `rescue_dir`),
the store says where through `on_note`, and `rescued` tells the command to exit 1 at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.core.schema import (
    Host,
    RecordError,
    ResultsDoc,
    Run,
    VariantResult,
    run_from_json,
    to_json,
    variant_from_json,
)
from precmon.measure.results import (
    ResultsError,
    dumps_strict,
    load_results,
    results_document,
    utc_now_iso,
    write_json_atomic,
)
from precmon.sweep import folder_lock
from precmon.sweep.events import VariantFinished
from precmon.sweep.fold import fold, new_document
from precmon.untrusted import redact_tree

NoteFn = Callable[[str], None]
RESULTS_NAME = "results.json"
JOURNAL_NAME = "journal.jsonl"


class FolderHasResults(RuntimeError):
    """A fresh measurement into a folder holding an earlier one's; str() is the one line that says so."""


def earlier_results(out_dir: Path) -> str | None:
    """What of an earlier sweep or bench `out_dir` holds, in words (its results.json, or a journal
    with runs in it: a sweep killed before its first results.json), or None when it holds none."""
    results, journal = Path(out_dir) / RESULTS_NAME, Path(out_dir) / JOURNAL_NAME
    if results.exists() or results.is_symlink():
        return f"{results} exists"
    try:
        if journal.is_symlink() or journal.stat().st_size > 0:
            return f"{journal} holds an earlier sweep's runs"
    except OSError:
        pass  # no journal
    return None


def rescue_dir(out_dir: Path) -> Path:
    """A fresh folder for results that `out_dir` could not take: the precmon cache, else /tmp."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"{Path(out_dir).name or 'out'}-{stamp}-{os.getpid()}"
    base = os.environ.get("PRECMON_CACHE") or str(Path.home() / ".cache" / "precmon")
    try:
        path = Path(base) / "rescue" / name
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"precmon-rescue-{name}-"))


def out_dir_problem(out_dir: Path) -> str | None:
    """Why `--out DIR` cannot hold a sweep (checked before anything is measured), or None.

    The folder is created if missing and a probe file written and removed: permission bits say
    little (root ignores them; a read-only mount does not show in them).
    """
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        return f"{path} exists and is not a folder"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():  # `a_file/sub`: say which part is in the way
        return f"cannot create it: {ancestor} is not a folder"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the folder {path}: {exc.strerror or exc}"
    try:
        fd, probe = tempfile.mkstemp(prefix=".precmon-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {path}: {exc.strerror or exc}"
    return None


@dataclass
class JournalRead:
    """What a journal holds: its records in order, and the lines that could not be read."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    torn_tail: bool = False  # the file does not end with a newline (a write cut short)


def read_journal(path: Path) -> JournalRead:
    """Every record of a journal; unreadable lines are named in `problems`, never fatal."""
    out = JournalRead()
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.problems.append(f"{path}: cannot read: {exc.strerror or exc}")
        return out
    out.torn_tail = bool(data) and not data.endswith(b"\n")
    for n, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            out.problems.append(f"{path}:{n}: not a complete record ({len(raw)} bytes), skipped")
            continue
        if not isinstance(rec, dict) or rec.get("type") not in ("run", "variant"):
            out.problems.append(f"{path}:{n}: not a journal record, skipped")
            continue
        out.records.append(rec | {"_line": n})
    return out


def runs_from_journal(path: Path) -> dict[str, list[Run]]:
    """Every run recorded in a journal, by variant label (tolerates torn or foreign lines)."""
    out: dict[str, list[Run]] = {}
    for rec in read_journal(path).records:
        if rec["type"] == "run" and isinstance(rec.get("variant"), str):
            try:
                out.setdefault(rec["variant"], []).append(run_from_json(rec.get("run"), f"line {rec['_line']}"))
            except RecordError:
                continue
    return out


def new_child(parent: Path, prefix: str) -> Path:
    """`parent/prefix-HHMMSS`, or `-2`, `-3`... after it when that name is taken (not created)."""
    stem = Path(parent) / f"{prefix}-{dt.datetime.now().strftime('%H%M%S')}"
    path, n = stem, 1
    while path.exists():
        n += 1
        path = stem.with_name(f"{stem.name}-{n}")
    return path


def unused_folder(folder: Path, prefix: str) -> tuple[Path, str | None]:
    """A folder for a new sweep: `folder` while it holds no earlier results and no live precmon
    writes it, else a `new_child` of it and why, in words."""
    why = folder_lock.holder(folder) or earlier_results(folder)
    return (Path(folder), None) if why is None else (new_child(folder, prefix), why)


class ResultStore:
    def __init__(self, out_dir: Path, settings: dict[str, Any], host: Host, on_note: NoteFn | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.results_path = self.out_dir / RESULTS_NAME
        self.journal_path = self.out_dir / JOURNAL_NAME
        self.settings, self.host = settings, host
        self._doc = new_document()  # the finished variants, one per label (sweep/fold.py)
        self.created = utc_now_iso()
        self.previous_settings: dict[str, Any] | None = None  # results.json's `settings`, read back by --resume
        self._note = on_note or (lambda text: None)
        self._journal: list[str] = []  # every line appended this session, for a rescue
        self._tail_checked = False
        self.rescued_to: Path | None = None  # set once a write to out_dir failed
        self._rescue_failed = False

    @property
    def rescued(self) -> bool:
        return self.rescued_to is not None

    @contextmanager
    def held(self) -> Iterator[None]:
        """The folder locked for this store's writes (raises folder_lock.FolderBusy, nothing changed)."""
        lock = folder_lock.take(self.out_dir)
        if lock.note:
            self._note(lock.note)
        try:
            yield
        finally:
            lock.release()

    # ---- reading back (--resume) ------------------------------------------------------------
    def load_existing(self) -> list[VariantResult]:
        """Variants already measured: results.json, then what only the journal holds.

        The journal is newer than results.json by up to one variant (it is appended first): the
        last `variant` record of a label wins, and runs journaled after a label's last `variant`
        record (a variant cut short by a crash) come back as a partial variant, so `--resume`
        measures it again and the report still shows what was measured.
        """
        known: dict[str, VariantResult] = {}
        if self.results_path.exists():
            doc = load_results(self.results_path)
            self.created = doc.get("created", self.created) if isinstance(doc.get("created"), str) else self.created
            settings = doc.get("settings")
            self.previous_settings = settings if isinstance(settings, dict) else None
            variants = doc.get("variants", [])
            if not isinstance(variants, list):
                raise ResultsError(f"{self.results_path}: 'variants' must be a list")
            for i, v in enumerate(variants):
                try:
                    vr = variant_from_json(v, f"variants[{i}]")
                except RecordError as exc:
                    raise ResultsError(f"{self.results_path}: {exc}") from exc
                known[vr.label] = vr
        self._recover_from_journal(known)
        for vr in known.values():
            self.amend(vr)
        return list(known.values())

    def _recover_from_journal(self, known: dict[str, VariantResult]) -> None:
        jr = read_journal(self.journal_path)
        for problem in jr.problems:
            self._note(problem)
        pending: dict[str, list[Run]] = {}
        from_journal: set[str] = set()
        for rec in jr.records:
            where = f"{self.journal_path}:{rec['_line']}"
            try:
                if rec["type"] == "variant":
                    vr = variant_from_json(rec.get("variant"), where)
                    pending.pop(vr.label, None)
                    old = known.get(vr.label)
                    if _newer(old, vr) and (old is None or to_json(old) != to_json(vr)):
                        known[vr.label] = vr
                        from_journal.add(vr.label)
                elif isinstance(rec.get("variant"), str):
                    pending.setdefault(rec["variant"], []).append(run_from_json(rec.get("run"), where))
            except RecordError as exc:
                self._note(f"{exc}: skipped")
        for label in sorted(from_journal):
            self._note(f"{label}: recovered from {self.journal_path.name} (newer than results.json)")
        for label, runs in pending.items():
            if label in known:  # a finished result exists: it stays (the cut-short runs stay in the journal)
                continue
            known[label] = VariantResult(
                label=label,
                status="partial",
                errors=[f"cut short: {len(runs)} run(s) recovered from {self.journal_path.name}; measured again"],
                runs=runs,
            )
            self._note(f"{label}: {len(runs)} run(s) of an unfinished variant recovered from {self.journal_path.name}")

    # ---- writing ----------------------------------------------------------------------------
    def _append(self, record: dict[str, Any]) -> None:
        line = dumps_strict(redact_tree(record), indent=None) + "\n"  # no credentials on disk
        self._journal.append(line)
        if self.rescued_to is not None:
            try:
                self._append_line(self.rescued_to / JOURNAL_NAME, line)
            except OSError as exc:
                self._lost(exc)
            return
        if self._tail_checked and not self.journal_path.exists():
            # deleted under us (and maybe its folder made again, by a launched server's log): the
            # lines written before are gone from there, so all of them go to the rescue folder
            self._rescue(f"{self.journal_path} was deleted")
            return
        try:
            self._append_line(self.journal_path, line, check_tail=not self._tail_checked)
            self._tail_checked = True
        except OSError as exc:
            self._rescue(f"{self.journal_path}: {exc.strerror or exc}")

    def _append_line(self, path: Path, line: str, check_tail: bool = False) -> None:
        with open(path, "ab") as f:
            if check_tail and f.tell() > 0:
                with open(path, "rb") as r:  # a torn last line gets its own line end, so ours is whole
                    r.seek(-1, os.SEEK_END)
                    if r.read(1) != b"\n":
                        f.write(b"\n")
                        self._note(f"{path}: its last line was torn (a write cut short); it is skipped")
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

    def _rescue(self, why: str) -> None:
        """Move to the rescue folder: this session's journal lines, then every later write."""
        self.rescued_to = rescue_dir(self.out_dir)
        self._note(f"cannot write to {self.out_dir} ({why}): measuring on, results now go to {self.rescued_to}")
        try:
            with open(self.rescued_to / JOURNAL_NAME, "w", encoding="utf-8") as f:
                f.writelines(self._journal)
        except OSError as exc:
            self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        """The rescue folder failed too: measuring goes on in memory, and the end says so once."""
        if not self._rescue_failed:
            self._rescue_failed = True
            self._note(f"cannot write to {self.rescued_to} either ({exc.strerror or exc}): results are in memory only")

    def add_run(self, label: str, run: Run) -> None:
        self._append({"type": "run", "variant": label, "at": utc_now_iso(), "run": to_json(run)})

    def put_variant(self, result: VariantResult) -> None:
        """A finished variant: journaled, folded into the document (replacing an earlier record of
        its label), and results.json rewritten."""
        self.amend(result)
        self._append({"type": "variant", "at": utc_now_iso(), "variant": to_json(result)})
        self.write()

    def amend(self, result: VariantResult) -> None:
        """Fold a finished variant into the document without journaling it (one read back by
        `--resume`, or its fields filled in from the sweep file)."""
        self._doc = fold(self._doc, VariantFinished(result, self.current_results_path))

    def idle_watts(self) -> float | None:
        """The idle power measured earlier in this sweep (the first variant that has it)."""
        for col in self._doc.variants:
            w = col.metrics.get(KEY.power_idle_w)
            if isinstance(w, (int, float)):
                return float(w)
        return None

    def document(self, order: list[str] | None = None) -> ResultsDoc:
        """results.json: the finished variants in `order` (the sweep file's), then any others."""
        cols = self._doc.variants
        rank = {label: n for n, label in enumerate(order or [c.label for c in cols])}
        ordered = sorted(cols, key=lambda c: rank.get(c.label, len(rank)))  # stable: others keep theirs
        return results_document(ordered, self.settings, self.host, created=self.created)

    def write(self, order: list[str] | None = None) -> Path:
        """Rewrite results.json (in the rescue folder after a fault); returns where it is."""
        doc = self.document(order)
        if self.rescued_to is None:
            try:
                write_json_atomic(self.results_path, doc, make_parents=False)
                return self.results_path
            except OSError as exc:
                self._rescue(f"{self.results_path}: {exc.strerror or exc}")
        assert self.rescued_to is not None
        path = self.rescued_to / RESULTS_NAME
        try:
            write_json_atomic(path, doc)
        except OSError as exc:
            self._lost(exc)
        return path

    @property
    def current_results_path(self) -> Path:
        return self.rescued_to / RESULTS_NAME if self.rescued_to else self.results_path


def _newer(old: VariantResult | None, vr: VariantResult) -> bool:
    """A journaled variant replaces results.json's copy unless that one is already complete."""
    return old is None or old.status != "ok" or vr.status == "ok"
