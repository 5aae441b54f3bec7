"""scripts/reread_compute_path.py re-reads a results file's compute path from the sweep's saved server
logs with this tree's readers, and keeps everything measured. It called the results model as dicts
(`VariantResult(...).extra`) after the model became typed records and would have failed on first use."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from precmon.core.warning_codes import FALLBACK_CODE

TESTS = Path(__file__).resolve().parents[1]
SCRIPT = TESTS.parent / "scripts" / "reread_compute_path.py"
H200_LOG = TESTS / "fakes" / "logs" / "llama-server-h200-nvfp4.log"


def load():
    spec = importlib.util.spec_from_file_location("reread_compute_path", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _variant(label: str, kind: str, warnings: list[str]) -> dict:
    return {
        "label": label,
        "precision": "NVFP4",
        "model": "m.gguf",
        "server": {"kind": kind},
        "status": "ok",
        "metrics": {"decode_tok_s": 600.0},
        "runs": [],
        "weights": {"main_type": "NVFP4"},
        "compute_path": {"words": "CPU", "kernel": "stale"},
        "warnings": warnings,
    }


def test_a_saved_log_replaces_the_compute_path_and_the_fallback_warning_only(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(H200_LOG, logs / "NVFP4.log")
    doc = {
        "schema": "precmon.results/1",
        "variants": [
            _variant("NVFP4", "llamacpp", ["cpu-only: stale", f"{FALLBACK_CODE} stale reading"]),
            _variant("OTHER", "ollama", []),
        ],
    }
    results = tmp_path / "results.json"
    results.write_text(json.dumps(doc))

    assert load().main([str(results)]) == 0

    out = json.loads(results.read_text())
    cuda, other = out["variants"]
    assert cuda["compute_path"]["backend"] == "CUDA" and cuda["compute_path"]["device"] == "NVIDIA H200"
    assert "int8 dot products" in cuda["compute_path"]["kernel"]
    fallback = [w for w in cuda["warnings"] if w.startswith(FALLBACK_CODE)]
    assert len(fallback) == 1 and "stale" not in fallback[0]
    assert "cpu-only: stale" in cuda["warnings"]  # a warning of another code is kept
    assert cuda["metrics"] == {"decode_tok_s": 600.0} and cuda["weights"] == {"main_type": "NVFP4"}
    # a kind whose log precmon does not read: the reason, not a path, and no fallback warning
    assert set(other["compute_path"]) == {"reason"} and "ollama" in other["compute_path"]["reason"]
    assert other["warnings"] == []
