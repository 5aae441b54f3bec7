#!/usr/bin/env python3
"""Re-read each variant's compute path of a sweep's results file from the server logs the sweep
saved (OUT/logs/LABEL.log), with this tree's log readers: for a results file recorded before
precmon knew a log's format. It replaces `compute_path` and the `fallback-kernel:` warnings, keeps
everything measured, and writes the file the sweep's way (atomically).

Usage: python3 scripts/reread_compute_path.py OUT/results.json [--logs OUT/logs] [--out FILE]
Run from the repository root with the package installed, or with PYTHONPATH=src.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def reread(doc: dict[str, Any], logs: Path) -> list[str]:
    """Replace each variant's `compute_path` and `fallback-kernel:` warnings in `doc` (the file's
    JSON as read) with what this tree reads from `logs`/LABEL.log; one line per variant, before → after."""
    from precmon.core.schema import VariantResult
    from precmon.core.warning_codes import FALLBACK_CODE
    from precmon.measure.labels.true_label import record_log_compute_path

    lines = []
    for v in doc["variants"]:
        kind = (v.get("server") or {}).get("kind", "")
        log = logs / f"{v['label']}.log"
        # A kind whose log precmon does not read gets its reason from record_log_compute_path.
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else None
        # The rest of the file stays as read; only the two fields the log gives go through the
        # typed record that record_log_compute_path fills.
        probe = VariantResult(v["label"], v.get("precision"), v.get("model"), weights=v.get("weights"))
        record_log_compute_path(probe, kind, text, log if log.exists() else None)
        before = v.get("compute_path")
        v["compute_path"] = probe.compute_path
        kept = [w for w in v.get("warnings") or [] if not w.startswith(FALLBACK_CODE)]
        v["warnings"] = kept + (probe.warnings or [])
        lines.append(f"{v['label']}: {json.dumps(before)} -> {json.dumps(v['compute_path'])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    from precmon.measure.results import write_json_atomic

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path)
    p.add_argument("--logs", type=Path, default=None, help="the sweep's logs folder (default: beside the file)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default: over the results file)")
    a = p.parse_args(argv)
    doc = json.loads(a.results.read_text(encoding="utf-8"))
    for line in reread(doc, a.logs or a.results.parent / "logs"):
        print(line)
    write_json_atomic(a.out or a.results, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
