"""The plan-settings table: every setting of a bench plan, and of quality scoring, declared once.

One row per setting says its name (the `BenchSettings` attribute, the sweep-file key and the key
of a results file's `settings`), its kind, default, `--quick` value, bounds, flag and help. The
front ends are generated from it: the argparse groups of `precmon bench` (`cli/parser.py`), the
sweep-file check (`sweep/spec.py`), the results loader's check (`report/load.py`) and
`measure.checks.setting_problem`. One function, `Setting.problem`, says why a value is out of
bounds, in the same words for a flag, a sweep key and a stored file, so they cannot drift again
(they had: three copies of the bounds, defaults restated in help strings).

The plan rows are the fields of `BenchSettings` (their metadata), so a new plan setting is one
field here plus the code that uses it; `to_dict()` is what results files store.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

MAX_TOKENS = 10_000_000  # beyond any model's context: a typo, not a plan
MAX_STREAMS = 4096
MAX_REPEATS = 10_000
MAX_SECONDS = 1e7  # ~115 days; a longer wait overflows the clocks the deadlines use
MAX_QUALITY_POSITIONS = 100_000
MAX_QUALITY_TOP_K = 100  # vLLM caps at its --max-logprobs (20 by default); more only grows the JSON
ENDPOINTS = ("completions", "chat")  # the same as precmon.servers.kinds.ENDPOINTS (a test holds them equal)
DEFAULT_PREFILL_TOKENS = (512, 1024, 4096, 8192, 16384)

# Kinds of value: what the flag parses, the sweep file's TOML type and the bounds rule.
INT = "int"  # an integer in [low, high]
INTS = "ints"  # a non-empty comma list / TOML array of integers, each in [low, high]
SECONDS = "seconds"  # a finite number of seconds in [0, MAX_SECONDS] (> 0 when `positive`)
PERCENT = "percent"  # a percentage of the median in (0, 100]
CHOICE = "choice"  # one of `choices`
FLAG = "flag"  # on or off (`--quality`, TOML true/false)
TEXT = "text"  # a string: a file name


class _Same:
    """`quick` when `--quick` keeps the default."""

    def __repr__(self) -> str:
        return "SAME"


SAME: Any = _Same()


@dataclass(frozen=True)
class Setting:
    """One row of the table.

    Attributes:
        name: attribute, sweep key and results key (`timeout_s`).
        kind: one of INT, INTS, SECONDS, PERCENT, CHOICE, FLAG, TEXT.
        default: the value when nothing asks for another.
        help: what it does, for `--help` (the default is appended from `default`).
        flag: the command-line flag; None: `--` and the name with dashes. metavar: its metavar.
        quick: the `--quick` value (SAME: the default).
        low, high: the bounds of INT and INTS (None: unbounded); `unit` is said after `high`
            ("expected at most 4096 streams"), `low_why` when a positive value is below `low`.
        ranged: say "an integer from low to high" for either bound (quality's style).
        positive: SECONDS only: 0 is not allowed (a timeout of 0 fails every request).
        shown: how `--help` says the default, when not the value itself ("": not at all); `note`
            follows it.
        what: the sweep file's words for the TOML type ("positive integer"); "" derives them.
        choices: CHOICE only.
        sweep: a sweep-file key (else a flag only, as `--quality-ref`).
    """

    name: str
    kind: str
    default: Any
    help: str
    flag: str | None = None
    metavar: str | None = None
    quick: Any = SAME
    low: int | None = None
    high: float | None = None
    unit: str = ""
    low_why: str = ""
    ranged: bool = False
    positive: bool = False
    shown: str | None = None
    note: str = ""
    what: str = ""
    choices: tuple[str, ...] = ()
    sweep: bool = True

    @property
    def option(self) -> str:  # the flag: `--timeout`
        return ("--" + self.name.replace("_", "-")) if self.flag is None else self.flag

    @property
    def dest(self) -> str:  # the argparse attribute the flag fills
        return self.option[2:].replace("-", "_")

    @property
    def quick_value(self) -> Any:
        return copy.copy(self.default if self.quick is SAME else self.quick)

    def help_text(self) -> str:
        """`--help`: what it does and its default, from this row (never a restated literal)."""
        if self.kind == FLAG or self.shown == "":
            return self.help
        said = self.shown if self.shown is not None else show(self.default, self.kind)
        return f"{self.help} (default {said}{'; ' + self.note if self.note else ''})"

    def toml_types(self) -> tuple[type, ...]:
        """The Python types a TOML value of this setting may have (bool is never a number)."""
        return {INT: (int,), INTS: (list,), SECONDS: (int, float), PERCENT: (int, float), FLAG: (bool,)}.get(
            self.kind, (str,)
        )

    def type_words(self) -> str:
        """The sweep file's words for the type, in "expected positive integer, got str 'two'"."""
        if self.what:
            return self.what
        if self.kind == INT:
            return "positive integer" if (self.low or 0) >= 1 else "non-negative integer"
        if self.kind == INTS:
            return f"list of {_ints_words(self.low)}"
        return {
            SECONDS: "number of seconds",
            PERCENT: "percentage of the median, > 0 and <= 100",
            CHOICE: " or ".join(f'"{c}"' for c in self.choices),
            FLAG: "true or false",
        }.get(self.kind, "string")

    def type_problem(self, value: Any) -> str | None:
        """Why `value` (from TOML or JSON) has the wrong type for this setting, or None."""
        types = self.toml_types()
        if (isinstance(value, bool) and types != (bool,)) or not isinstance(value, types):
            return f"expected {self.type_words()}, got {type(value).__name__} {value!r}"
        return None

    def problem(self, value: Any) -> str | None:
        """Why a value of the right type is out of bounds, in words, or None: the one check that
        the flags, the sweep file and the results loader all apply."""
        if value is None or self.kind in (FLAG, TEXT):
            return None
        if self.kind == INT:
            return self._int_problem(value)
        if self.kind == INTS:
            return self._ints_problem(value)
        if self.kind == SECONDS:
            return seconds_problem(value, self.positive)
        if self.kind == PERCENT and not (math.isfinite(value) and 0 < value <= 100):
            return f"expected a percentage of the median, > 0 and <= 100, got {value}"
        if self.kind == CHOICE and value not in self.choices:
            return f"expected {self.type_words()}, got {value!r}"
        return None

    def _int_problem(self, value: int) -> str | None:
        low, high = self.low or 0, self.high
        if self.ranged and not (low <= value <= (high if high is not None else value)):
            return f"expected an integer from {low} to {high}, got {value}"
        if value < low:
            if value <= 0 and low >= 1:
                return f"expected a positive integer, got {value}"
            if low == 0:
                return f"expected a non-negative integer, got {value}"
            return f"expected at least {low} ({self.low_why}), got {value}"
        if high is not None and value > high:
            return f"expected at most {_count(high)}{self.unit}, got {value}"
        return None

    def _ints_problem(self, value: list[Any]) -> str | None:
        low = self.low or 0
        if not value or any(isinstance(v, bool) or not isinstance(v, int) or v < low for v in value):
            return f"expected a non-empty list of {_ints_words(self.low)}, got {value!r}"
        for v in value:
            if self.high is not None and v > self.high:
                return f"expected at most {_count(self.high)}{self.unit}, got {v}"
        return None

    def parse(self, text: str) -> Any:
        """A flag's text as a value of this kind (bounds are `problem`'s).

        Raises:
            ValueError: one line, "expected an integer, got 'x'".
        """
        if self.kind == INT:
            try:
                return int(text)
            except ValueError:
                raise ValueError(f"expected an integer, got {text!r}") from None
        if self.kind == INTS:
            try:
                return [int(x) for x in text.split(",") if x.strip()]
            except ValueError:
                raise ValueError(f"expected comma-separated integers, got {text!r}") from None
        if self.kind in (SECONDS, PERCENT):
            try:
                return float(text)
            except ValueError:
                what = "seconds" if self.kind == SECONDS else "percent"
                raise ValueError(f"expected a number of {what}, got {text!r}") from None
        return text


def _count(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _ints_words(low: int | None) -> str:
    return "positive integers" if (low or 0) >= 1 else f"integers >= {low or 0}"


def show(value: Any, kind: str = "") -> str:
    """A value as `--help` says it: `512,1024`, `3 s`, `none`."""
    if value is None or value == []:
        return "none"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}" + (" s" if kind == SECONDS else "")
    return str(value)


def seconds_problem(value: float, positive: bool = False) -> str | None:
    """Why a number of seconds is impossible, or None: NaN and ±inf are never seconds, negative
    ones never happen, beyond MAX_SECONDS the clocks overflow; `positive`: 0 is refused too."""
    if value < 0:
        return f"expected a non-negative number of seconds, got {value}"
    if not math.isfinite(value):
        return f"expected a finite number of seconds, got {value}"
    if positive and value <= 0:
        return f"expected a number of seconds > 0, got {value}"
    if value > MAX_SECONDS:
        return f"expected at most {MAX_SECONDS:.0e} seconds, got {value}"
    return None


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
    Setting("quality_positions", INT, 512, "positions scored", metavar="N", high=MAX_QUALITY_POSITIONS, **_SCORED),
    Setting("quality_top_k", INT, 20, "top-K log-probabilities per position", metavar="K", high=MAX_QUALITY_TOP_K,
            **_SCORED),
)  # fmt: skip
SETTINGS: tuple[Setting, ...] = PLAN + QUALITY
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
#: The sweep-file keys of the table (plan and quality), in table order.
SWEEP_KEYS: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.sweep)


def quick_help() -> str:
    """`--quick`'s help: the values it picks, from the rows."""
    picks = [f"{s.option} {show(s.quick)}" for s in PLAN if s.quick is not SAME and s.quick != s.default]
    return f"small sizes for a fast look (and CPU tests): {', '.join(picks)}; explicit flags still win"


def value_problem(key: str, value: Any) -> str | None:
    """Why a value (of the right type) of setting `key` is impossible, or None; a key outside the
    table that names seconds (`ready_timeout_s`, `cooldown_s`) gets the seconds rule."""
    row = BY_NAME.get(key)
    if row is not None:
        return row.problem(value)
    if key.endswith("_s") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return seconds_problem(value, positive=key == "ready_timeout_s")
    return None
