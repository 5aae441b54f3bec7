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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def main() -> int:
    from precmon.core.schema import VariantResult
    from precmon.core.warning_codes import FALLBACK_CODE
    from precmon.measure.labels.true_label import LOG_READERS, record_log_compute_path
    from precmon.measure.results import write_json_atomic

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path)
    p.add_argument("--logs", type=Path, default=None, help="the sweep's logs folder (default: beside the file)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default: over the results file)")
    a = p.parse_args()
    doc = json.loads(a.results.read_text(encoding="utf-8"))
    logs = a.logs or a.results.parent / "logs"
    for v in doc["variants"]:
        kind = (v.get("server") or {}).get("kind", "")
        log = logs / f"{v['label']}.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() and kind in LOG_READERS else None
        probe = VariantResult(v["label"], v.get("precision"), v.get("model"), {})
        probe.extra["weights"] = v.get("weights")
        record_log_compute_path(probe, kind, text, log if log.exists() else None)
        before = v.get("compute_path")
        v["compute_path"] = probe.extra["compute_path"]
        kept = [w for w in v.get("warnings", []) if not w.startswith(FALLBACK_CODE)]
        v["warnings"] = kept + probe.extra.get("warnings", [])
        print(f"{v['label']}: {json.dumps(before)} -> {json.dumps(v['compute_path'])}")
    write_json_atomic(a.out or a.results, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
