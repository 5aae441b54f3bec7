"""Results that survive anything: an append-only journal plus an atomically rewritten JSON.

Each run is appended to `journal.jsonl` (flushed and fsynced) the moment it lands; after each
variant `results.json` is rewritten atomically. A crash, a kill or Ctrl-C leaves every measured
run on disk; `--resume` reads `results.json` back and skips what is already done.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from precmon.measure.results import (
    Run,
    VariantResult,
    load_results,
    results_document,
    utc_now_iso,
    write_json_atomic,
)
from precmon.untrusted import redact_tree


class ResultStore:
    def __init__(self, out_dir: Path, settings: dict[str, Any], host: dict[str, Any]) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.results_path = self.out_dir / "results.json"
        self.journal_path = self.out_dir / "journal.jsonl"
        self.settings, self.host = settings, host
        self.variants: dict[str, VariantResult] = {}
        self.created = utc_now_iso()

    def load_existing(self) -> list[VariantResult]:
        """Variants already in results.json (for --resume)."""
        if not self.results_path.exists():
            return []
        doc = load_results(self.results_path)
        self.created = doc.get("created", self.created)
        for v in doc.get("variants", []):
            vr = VariantResult.from_dict(v)
            self.variants[vr.label] = vr
        return list(self.variants.values())

    def _append(self, record: dict[str, Any]) -> None:
        with open(self.journal_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(redact_tree(record), ensure_ascii=False) + "\n")  # no credentials on disk
            f.flush()
            os.fsync(f.fileno())

    def add_run(self, label: str, run: Run) -> None:
        self._append({"type": "run", "variant": label, "at": utc_now_iso(), "run": run.to_dict()})

    def put_variant(self, result: VariantResult) -> None:
        self.variants[result.label] = result
        self._append({"type": "variant", "at": utc_now_iso(), "variant": result.to_dict()})
        self.write()

    def document(self, order: list[str] | None = None) -> dict[str, Any]:
        labels = order or list(self.variants)
        variants = [self.variants[x] for x in labels if x in self.variants]
        variants += [v for k, v in self.variants.items() if k not in labels]
        return results_document(variants, self.settings, self.host, created=self.created)

    def write(self, order: list[str] | None = None) -> Path:
        write_json_atomic(self.results_path, self.document(order))
        return self.results_path


def runs_from_journal(path: Path) -> dict[str, list[Run]]:
    """Every run recorded in a journal, by variant label (tolerates a torn last line)."""
    out: dict[str, list[Run]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if rec.get("type") == "run":
            out.setdefault(rec["variant"], []).append(Run.from_dict(rec["run"]))
    return out
