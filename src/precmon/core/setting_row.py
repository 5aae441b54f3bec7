"""One row of the settings table (core/settings.py): a setting's kind, default, bounds, flag and
help, and the one check (`Setting.problem`) that the flags, the sweep file and the results loader
all apply, in the same words.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

MAX_SECONDS = 1e7  # ~115 days; a longer wait overflows the clocks the deadlines use

# Kinds of value: what the flag parses, the sweep file's TOML type and the bounds rule.
INT = "int"  # an integer in [low, high]
INTS = "ints"  # a non-empty comma list / TOML array of integers, each in [low, high]
SECONDS = "seconds"  # a finite number of seconds in [0, MAX_SECONDS] (> 0 when `positive`)
PERCENT = "percent"  # a percentage of the median in (0, 100]
CHOICE = "choice"  # one of `choices`
FLAG = "flag"  # on or off (`--quality`, TOML true/false)
TEXT = "text"  # a string: a file name
NUMBER = "number"  # a finite number > 0 in `unit` (at most `high`): a budget, as max_kld


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
        kind: one of INT, INTS, SECONDS, PERCENT, NUMBER, CHOICE, FLAG, TEXT.
        default: the value when nothing asks for another.
        help: what it does, for `--help` (the default is appended from `default`).
        flag: the command-line flag; None: `--` and the name with dashes. metavar: its metavar.
        quick: the `--quick` value (SAME: the default).
        low, high: the bounds of INT and INTS, `high` of NUMBER (None: unbounded); `unit` is said
            after `high` ("expected at most 4096 streams"), `low_why` when a positive value is below `low`.
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
        said += self.unit if self.kind == NUMBER and self.shown is None else ""
        return f"{self.help} (default {said}{'; ' + self.note if self.note else ''})"

    def toml_types(self) -> tuple[type, ...]:
        """The Python types a TOML value of this setting may have (bool is never a number)."""
        numbers = (int, float)
        kinds = {INT: (int,), INTS: (list,), SECONDS: numbers, PERCENT: numbers, NUMBER: numbers, FLAG: (bool,)}
        return kinds.get(self.kind, (str,))

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
            NUMBER: f"positive number{' of' + self.unit if self.unit else ''}",
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
        if self.kind == NUMBER:
            return self._number_problem(value)
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

    def _number_problem(self, value: float) -> str | None:
        of = f" of{self.unit}" if self.unit else ""
        if not math.isfinite(value):
            return f"expected a finite number{of}, got {value}"
        if value <= 0:
            return f"expected a positive number{of}, got {value}"
        if self.high is not None and value > self.high:
            return f"expected at most {_count(self.high)}{self.unit}, got {value}"
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
        if self.kind in (SECONDS, PERCENT, NUMBER):
            try:
                return float(text)
            except ValueError:
                what = {SECONDS: "seconds", PERCENT: "percent"}.get(self.kind, self.unit.strip())
                raise ValueError(f"expected a number{' of ' + what if what else ''}, got {text!r}") from None
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
