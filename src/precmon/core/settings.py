"""The settings table: every setting of a bench plan, of quality scoring and of judging the
results, declared once.

One row per setting says its name (the `BenchSettings` attribute, the sweep-file key and the key
of a results file's `settings`), its kind, default, `--quick` value, bounds, flag and help
(`core/setting_row.py`). The front ends are generated from it: the argparse groups
(`cli/parser.py`), the sweep-file check (`sweep/spec.py`), the results loader's check
(`report/load.py`), `measure.checks.setting_problem` and `QualitySettings`
(`measure/quality/run.py`). One function, `Setting.problem`, says why a value is out of bounds, in
the same words for a flag, a sweep key and a stored file, so they cannot drift again (they had:
three copies of the bounds, defaults restated in help strings).

Three groups: PLAN (the fields of `BenchSettings`, their metadata; `to_dict()` is what results
files store), QUALITY (what quality is scored on; a variant's `quality` records what was used) and
REPORT (how the results are judged: stored in `settings` when given, read back by `judged_by`).
A new setting is one row of its group plus the code that uses it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from precmon.core.setting_row import (  # the row type and its one check; re-exported for the front ends
    CHOICE,
    FLAG,
    INT,
    INTS,
    NUMBER,
    PERCENT,
    SAME,
    SECONDS,
    TEXT,
    Setting,
    seconds_problem,
    show,
)
from precmon.core.setting_row import (
    MAX_SECONDS as MAX_SECONDS,
)

MAX_TOKENS = 10_000_000  # beyond any model's context: a typo, not a plan
MAX_STREAMS = 4096
MAX_REPEATS = 10_000
MAX_QUALITY_POSITIONS = 100_000
MAX_QUALITY_TOP_K = 100  # vLLM caps at its --max-logprobs (20 by default); more only grows the JSON
#: Adaptive top-K (measure/quality/adaptive.py): the share of the baseline's probability its listed
#: tokens should hold at each position, and the most tokens asked for a position.
QUALITY_TARGET_MASS = 0.95
QUALITY_TOP_K_MAX = 1000
#: vLLM's most a position (measure/quality/collect.py PROMPT_LOGPROBS_MAX): its answer lists every
#: prompt position at one K, and its size is the quality pass's cost there.
QUALITY_VLLM_TOP_K_MAX = 50
#: Which positions are scored (measure/quality/windows.py): llama-perplexity's windows (the
#: default, comparable with published KL tables) or the text from its first token.
QUALITY_CONVENTIONS = ("llama-perplexity", "from-start")
QUALITY_WINDOW_TOKENS = 512  # llama-perplexity's `-c 512`, the context of published KL tables
ENDPOINTS = ("completions", "chat")  # the same as precmon.servers.kinds.ENDPOINTS (a test holds them equal)
DEFAULT_PREFILL_TOKENS = (512, 1024, 4096, 8192, 16384)


def plan(default: Any, kind: str, help: str, **row: Any) -> Any:
    """A `BenchSettings` field that is also a row of the table (its metadata)."""
    return field(default_factory=lambda: copy.copy(default), metadata={"row": (default, kind, help, row)})


_TOKENS = {"low": 1, "high": MAX_TOKENS, "unit": " tokens", "metavar": "N"}
_REPEATS = {"low": 1, "high": MAX_REPEATS, "metavar": "N"}


@dataclass
class BenchSettings:
    """The plan of one bench: each field is a row of the plan-settings table (`PLAN`); the
    order of the fields is the order of `settings` in a results file and of `--help`."""

    output_tokens: int = plan(
        256,
        INT,
        "decode length",
        quick=64,
        **_TOKENS | {"low": 2},
        low_why="decode tok/s is timed from the first token to the last",
    )
    decode_prompt_tokens: int = plan(128, INT, "prompt length of the decode test", quick=32, **_TOKENS)
    prefill_tokens: list[int] = plan(
        list(DEFAULT_PREFILL_TOKENS),
        INTS,
        "prompt sizes for prefill ms/token",
        quick=[128, 512],
        note="clipped to the server's context, clipped ones reported as skipped",
        **_TOKENS | {"metavar": "N,N,..."},
    )
    ttft_tokens: int | None = plan(8192, INT, "TTFT prompt size", quick=512, **_TOKENS)
    repeats: int = plan(3, INT, "measured repeats, median reported", quick=2, **_REPEATS)
    warmup: int = plan(1, INT, "unmeasured warm-up requests", **_REPEATS | {"low": 0})
    concurrency: list[int] = plan(
        [],
        INTS,
        "optional multi-user test: simultaneous streams, e.g. 1,4,16",
        low=1,
        high=MAX_STREAMS,
        unit=" streams",
        metavar="N,N,...",
    )
    long_context_tokens: list[int] = plan(
        [],
        INTS,
        "optional: decode speed with this much context already in the prompt, e.g. 4096,32768",
        **_TOKENS | {"metavar": "N,N,..."},
    )
    # context depths (measure/depth/steps.py); 0 is one (llama-bench's d0)
    depth: list[int] = plan(
        [],
        INTS,
        "optional: llama-bench -d context depths, e.g. 0,4096,16384: prefill (--prefill-tokens new "
        "tokens) and decode with D tokens already in context, served from the prompt cache after one fill request",
        **_TOKENS | {"low": 0, "metavar": "D,D,..."},
    )
    idle_s: float = plan(
        3.0,
        SECONDS,
        "idle power window before load",
        quick=1.0,
        metavar="S",
        note="0 takes one near-instant reading, it does not skip it",
    )
    timeout_s: float = plan(
        300.0,
        SECONDS,
        "total deadline per request and per probe, not per read",
        quick=120.0,
        positive=True,
        flag="--timeout",
        metavar="S",
    )
    # Adaptive repeats: with a target, each phase (and size) repeats past `repeats` until the 95% CI
    # half-width of its headline metric is within `target_ci_pct` % of the median, or until
    # `max_repeats` runs (never fewer than `repeats`). None: exactly `repeats` runs.
    target_ci_pct: float | None = plan(
        None,
        PERCENT,
        "repeat each phase past --repeats until its 95% CI half-width is within PCT% of the median",
        flag="--target-ci",
        metavar="PCT",
        shown="none: exactly --repeats runs",
    )
    max_repeats: int = plan(10, INT, "with --target-ci: stop a phase after N runs even if its CI is wider", **_REPEATS)
    # "completions" (a raw prompt) or "chat" (one user message in the model's chat template);
    # docs/design.md §3 `--endpoint`, §4 "Chat endpoint" for how prompt sizes are kept exact.
    endpoint: str = plan(
        "completions",
        CHOICE,
        "completions: the raw prompt (/v1/completions, Ollama /api/generate); chat: the "
        "prompt as one user message in the model's chat template (/v1/chat/completions, /api/chat), prompt sizes "
        "counting the template's tokens",
        choices=ENDPOINTS,
    )

    @classmethod
    def quick(cls) -> BenchSettings:
        """Small sizes for a fast look, and for tests on a CPU: each row's `quick` value."""
        return cls(**{s.name: s.quick_value for s in PLAN})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The plan rows, in field order: what `BenchSettings` holds and a results file's `settings` stores.
PLAN: tuple[Setting, ...] = tuple(
    Setting(f.name, kind, default, help, **row)
    for f in fields(BenchSettings)
    for default, kind, help, row in [f.metadata["row"]]
)
#: Quality scoring (docs/design.md §4 "Quality"): `precmon bench` flags and sweep keys, not stored
#: in `settings` (a variant's `quality` holds what was used). Any of the flags turns scoring on.
_SCORED: dict[str, Any] = {"low": 1, "ranged": True, "note": "a reference decides its own"}
QUALITY: tuple[Setting, ...] = (
    Setting("quality", FLAG, False, "after the plan, record this server's next-token distributions on the evaluation "
            "text as a quality reference (saved in --json as quality_reference)"),
    Setting("quality_ref", TEXT, None, "after the plan, score KL divergence, top-1 agreement and perplexity against a "
            "saved reference (a results JSON of `bench --quality`, or a sweep's quality-ref.json)", metavar="FILE",
            sweep=False, shown=""),
    Setting("quality_text", TEXT, None, "UTF-8 evaluation text", metavar="FILE", shown="the built-in one",
            what="path of a UTF-8 text file"),
    # 510: two llama-perplexity windows of 255, the weight of the 512 positions scored before them;
    # a third would cost every vLLM variant one more answer listing all 512 prompt positions.
    Setting("quality_positions", INT, 510, "positions scored (llama-perplexity's convention: as many "
            f"{QUALITY_WINDOW_TOKENS}-token windows as they need, each scored whole)", metavar="N",
            high=MAX_QUALITY_POSITIONS, **_SCORED),
    Setting("quality_convention", CHOICE, QUALITY_CONVENTIONS[0], f"{QUALITY_CONVENTIONS[0]}: score as "
            f"`llama-perplexity --kl-divergence -c {QUALITY_WINDOW_TOKENS}` does (each window on its own, its second "
            f"half scored), comparable with published KL tables; {QUALITY_CONVENTIONS[1]}: the text's positions from "
            "its first token on (for texts shorter than a window)", choices=QUALITY_CONVENTIONS, metavar="NAME",
            note="a reference decides its own"),
    Setting("quality_top_k", INT, 20, "the fewest next-token log-probabilities listed per position (adaptive "
            f"top-K: the baseline lists as many more as hold {QUALITY_TARGET_MASS:.0%} of its probability, up to "
            f"{QUALITY_TOP_K_MAX}; vLLM up to {QUALITY_VLLM_TOP_K_MAX} and its --max-logprobs)", metavar="K",
            high=MAX_QUALITY_TOP_K, **_SCORED),
)  # fmt: skip
#: How the results are judged, not how they are measured (docs/design.md §8 "The pick"): a flag of
#: every command that measures or reports (`bench`, `sweep`, `demo`, the TUI, `report`), a sweep key
#: of [defaults] only (one judgement for the whole document), and kept in the results file's
#: `settings` when given, so `precmon report` and the TUI's sweep table judge by it (`judged_by`);
#: `report`'s own flag overrides what the file says.
REPORT: tuple[Setting, ...] = (
    Setting("max_kld", NUMBER, 0.05, "quality budget of the pick line: the fastest decode among the variants whose "
            "mean KL against the baseline is at most this", metavar="NATS", unit=" nats",
            note='the edge of the "small" quality band'),
)  # fmt: skip
SETTINGS: tuple[Setting, ...] = PLAN + QUALITY + REPORT
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
#: The rows a results file's `settings` holds: the plan, and the report rows that were given.
STORED: tuple[Setting, ...] = PLAN + REPORT
#: The sweep-file keys of the table (plan, quality and report), in table order.
SWEEP_KEYS: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.sweep)


def quick_help() -> str:
    """`--quick`'s help: the values it picks, from the rows."""
    picks = [f"{s.option} {show(s.quick)}" for s in PLAN if s.quick is not SAME and s.quick != s.default]
    return f"small sizes for a fast look (and CPU tests): {', '.join(picks)}; explicit flags still win"


def report_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The report rows set in `values` (a sweep file's [defaults], `vars()` of parsed flags), in
    table order, unset ones left out: what a results document's `settings` adds to its plan."""
    found = {r.name: values.get(r.name, values.get(r.dest)) for r in REPORT}
    return {name: value for name, value in found.items() if value is not None}


def judged_by(name: str, stored: Mapping[str, Any] | None, given: Any = None) -> Any:
    """The value of report row `name` a reader judges by: `given` (`report`'s flag), else the
    document's `settings` (a value the row refuses reads as absent), else the row's default."""
    row = BY_NAME[name]
    if given is not None:
        return given
    value = (stored or {}).get(name)
    if value is None or row.type_problem(value) or row.problem(value):
        return row.default
    return value


def value_problem(key: str, value: Any) -> str | None:
    """Why a value (of the right type) of setting `key` is impossible, or None; a key outside the
    table that names seconds (`ready_timeout_s`, `cooldown_s`) gets the seconds rule."""
    row = BY_NAME.get(key)
    if row is not None:
        return row.problem(value)
    if key.endswith("_s") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return seconds_problem(value, positive=key == "ready_timeout_s")
    return None
