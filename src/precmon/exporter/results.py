"""`precmon_result_*` from the newest results files in a folder.

A fleet dashboard wants each node's measured variants beside its live power. The folder is read
at scrape time: `*.json` in it and one level down (a sweep's `--out` per run), each file parsed
and validated by `report.load.load_document` once per version (path, size, mtime) and cached.
Where several files measured the same variant (label, precision, model, KV cache type, host),
the newest file wins. A file that is not a valid results file is skipped with one warning line
on stderr per version of it, never a traceback: the exporter keeps serving the rest.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from precmon.core import phases
from precmon.core.metric_keys import KEY
from precmon.core.schema import NodePower, ResultsDoc
from precmon.exporter.catalog import family
from precmon.measure.quality.reference import FILE_NAME as QUALITY_REF_FILE
from precmon.report.load import load_document
from precmon.report.model import DocumentError
from precmon.sweep.launched import FOLDER as LAUNCHED_FOLDER
from precmon.untrusted import visible

MAX_FILES = 200  # newest files read per scrape: a scrape stays fast in a folder of years of runs
PHASES = ((phases.IDLE, KEY.power_idle_w), (phases.DECODE, KEY.power_decode_w), (phases.PREFILL, KEY.power_prefill_w))
SIMPLE = (
    ("precmon_result_decode_tokens_per_second", KEY.decode_tok_s),
    ("precmon_result_energy_per_token_joules", KEY.energy_decode_j_per_token),
    ("precmon_result_quality_kld_nats", KEY.quality_kld_mean),
    ("precmon_result_quality_top1_agreement_ratio", KEY.quality_top1_agree),  # already 0-1 in the file
    # the trusted format (llama-perplexity --kl-divergence's figures; err95 = half the 95% interval)
    ("precmon_result_quality_kld_err95_nats", KEY.quality_kld_mean_err95),
    ("precmon_result_quality_kld_p99_nats", KEY.quality_kld_p99),
    ("precmon_result_quality_kld_max_nats", KEY.quality_kld_max),
    ("precmon_result_quality_top1_agreement_err95_ratio", KEY.quality_top1_agree_err95),
    ("precmon_result_quality_ppl_ratio", KEY.quality_ppl_ratio),
    ("precmon_result_quality_rms_dp_ratio", KEY.quality_rms_dp),
)

# the memory fit's figures (docs/design.md §4 "Memory fit"), one sample per context / user count
FIT_SIZED = (
    ("precmon_result_fit_users", KEY.fit_users_at),
    ("precmon_result_fit_context_tokens", KEY.fit_context_for_users),
)

Key = tuple[int, int]  # (size, mtime_ns) of one version of a file


def _beside_results(p: Path) -> bool:
    """A file precmon writes into a sweep's --out that is not a results file: no warning for it."""
    return p.name == QUALITY_REF_FILE or p.parent.name == LAUNCHED_FOLDER


def _files(folder: Path) -> list[tuple[Path, Key]]:
    """The newest MAX_FILES `*.json` in the folder and one level down, newest first."""
    found = []
    for p in [*folder.glob("*.json"), *folder.glob("*/*.json")]:
        if _beside_results(p):
            continue
        try:
            st = p.stat()
        except OSError:
            continue
        if p.is_file():
            found.append((p, (st.st_size, st.st_mtime_ns)))
    found.sort(key=lambda f: f[1][1], reverse=True)
    return found[:MAX_FILES]


def _text(value: Any) -> str:
    """A label value from the file: terminal escapes stripped and control characters shown
    (`untrusted.visible`), so `curl /metrics` on a terminal is safe; quotes and backslashes
    stay, prometheus_client escapes them."""
    return visible(value) if isinstance(value, str) else ""


class ResultsCollector(Collector):
    """Yields the `precmon_result_*` families of the newest results in `folder`.

    Args:
        folder: where the results files are (a missing folder exports nothing).
        warn: where the one-line warnings about bad files go (stderr).
    """

    def __init__(self, folder: Path | str, warn: TextIO | None = None) -> None:
        self.folder = Path(folder)
        self.warn = warn
        self._cache: dict[Path, tuple[Key, ResultsDoc | None]] = {}

    def _load(self, path: Path, key: Key) -> ResultsDoc | None:
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        doc: ResultsDoc | None
        try:
            doc = load_document(path)
        except DocumentError as exc:
            doc = None
            self._say(f"precmon exporter: skipping {exc}")
        except OSError as exc:
            doc = None
            self._say(f"precmon exporter: skipping {path}: {exc.strerror or exc}")
        self._cache[path] = (key, doc)
        return doc

    def _say(self, line: str) -> None:
        print(visible(line.splitlines()[0] if line else line), file=self.warn or sys.stderr, flush=True)

    def documents(self) -> list[ResultsDoc]:
        """The valid documents, newest file first."""
        files = _files(self.folder)
        live = {p for p, _ in files}
        for gone in [p for p in self._cache if p not in live]:
            del self._cache[gone]
        return [d for p, k in files if (d := self._load(p, k)) is not None]

    def collect(self) -> Iterator[Metric]:
        fams = {name: family(name) for name, _ in SIMPLE}
        ttft, power = family("precmon_result_ttft_seconds"), family("precmon_result_power_watts")
        node_w = family("precmon_result_node_power_watts")
        node_jpt = family("precmon_result_node_energy_per_token_joules")
        sized = {name: family(name) for name, _ in FIT_SIZED}
        usable = family("precmon_result_fit_usable_bytes")
        seen: set[tuple[str, ...]] = set()
        for doc in self.documents():
            host = _text(doc.host.hostname)
            for v in doc.variants:
                labels = [_text(v.label), _text(v.precision), _text(v.model), _text(v.kv_cache_dtype), host]
                if tuple(labels) in seen:
                    continue  # a newer file measured this variant already
                seen.add(tuple(labels))
                m = v.metrics
                for name, key in SIMPLE:
                    x = m.get(key)
                    if isinstance(x, (int, float)):
                        fams[name].add_metric(labels, float(x))
                _add_sized(ttft, labels, m.get(KEY.ttft_s))
                for name, key in FIT_SIZED:
                    _add_sized(sized[name], labels, m.get(key))
                if v.fit is not None and isinstance(v.fit.usable_bytes, int):
                    usable.add_metric(labels, float(v.fit.usable_bytes))
                for phase, key in PHASES:
                    x = m.get(key)
                    if isinstance(x, (int, float)):
                        power.add_metric([*labels, phase], float(x))
                for node in v.power_by_node or []:  # several nodes: who drew what
                    where = [*labels, _text(node.node)]
                    for phase, x in node_phases(node):
                        if isinstance(x, (int, float)):
                            node_w.add_metric([*where, phase], float(x))
                    if isinstance(node.energy_decode_j_per_token, (int, float)):
                        node_jpt.add_metric(where, float(node.energy_decode_j_per_token))
        every = (*fams.values(), ttft, *sized.values(), usable, power, node_w, node_jpt)
        yield from (f for f in every if f.samples)


def node_phases(node: NodePower) -> tuple[tuple[str, float | None], ...]:
    """One node's watts per phase, in PHASES' order."""
    return (
        (phases.IDLE, node.power_idle_w),
        (phases.DECODE, node.power_decode_w),
        (phases.PREFILL, node.power_prefill_w),
    )


def _add_sized(fam: GaugeMetricFamily | CounterMetricFamily, labels: list[str], values: Any) -> None:
    """One sample per size of a sized metric (`{"8192": 12}`), in size order."""
    if not isinstance(values, dict):
        return
    for size, x in sorted(values.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            fam.add_metric([*labels, str(size)], float(x))
