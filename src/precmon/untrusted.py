"""Text that came from outside precmon: a server's body, a results or sweep file, a label.

Every such string passes through here before it reaches a terminal, a rich/Textual widget, a log
or an export. Three separate concerns, one place each:

- `visible(text)`: terminal escapes (ANSI CSI/OSC) are removed and other control characters are
  shown as Unicode control pictures (``\\x07`` → ``␇``), so a server cannot move the cursor,
  retitle the window or ring the bell; newlines become ``⏎`` in one-line contexts.
- `markup(text)`: `visible` plus rich markup escaping, for anything handed to rich or Textual
  (a label ``F16 [/]`` or ``Q4_K_M [imatrix]`` shows as typed and never raises MarkupError).
- `redact(text)` / `redact_url` / `redact_argv`: credentials are replaced by ``***`` before they
  are stored or shown: user:password in URLs, Authorization headers, bearer tokens, ``sk-…``/
  ``hf_…`` keys, and the values of ``--api-key``-style flags.
- `file_part(text)`: a label (from a file or a server's model id) as one piece of a file name.

This module imports nothing from precmon, so every layer may use it.
"""

from __future__ import annotations

import hashlib
import re

REDACTED = "***"

_ESCAPE_SEQ = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL/ST (window title, hyperlinks)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor moves, clear screen)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[@-Z\\-_]"  # other two-byte escapes
)
# C0/C1 controls, and the bidi controls that reorder what follows them (Trojan Source): shown as `\uXXXX`
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: object, *, one_line: bool = True, limit: int | None = None) -> str:
    """`text` with terminal escapes removed and control characters made visible.

    Args:
        text: anything; non-strings are converted with `str`.
        one_line: newlines and tabs become ``⏎`` and a space (for a table cell, a log line).
        limit: cut to this many characters, ending in ``…``.
    """
    s = text if isinstance(text, str) else str(text)
    s = _ESCAPE_SEQ.sub("", s)
    if one_line:
        s = s.replace("\r\n", "\n").replace("\n", "\u23ce").replace("\t", " ")
    s = _CONTROL.sub(_picture, s)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "\u2026"
    return s


def markup(text: object, *, one_line: bool = True, limit: int | None = None) -> str:
    """`visible(text)` escaped for rich markup: safe inside a rich/Textual markup string."""
    from rich.markup import escape

    return escape(visible(text, one_line=one_line, limit=limit))


FILE_PART_BYTES = 96  # of the 255 a file name may have: room for a prefix and a suffix


def file_part(text: object) -> str:
    """`text` as one piece of a file name: letters, digits and ``-_.`` kept, anything else ``_``
    (no path separator, no escape); never empty; cut to 96 bytes of UTF-8 with 8 hex digits of its
    hash, so two long labels sharing a start still name two files."""
    s = text if isinstance(text, str) else str(text)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in s) or "_"
    if len(safe.encode()) <= FILE_PART_BYTES:
        return safe
    digest = hashlib.sha256(s.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return safe.encode()[: FILE_PART_BYTES - 9].decode(errors="ignore") + "-" + digest


_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")
_AUTH_HEADER = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?)(?P<value>(?:(?:bearer|basic|token)\s+)?[^\s\"',;}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<name>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{6,})", re.IGNORECASE)
# A key has one long random segment (`hf_` + 34, `sk-proj-` + 48); a model name such as
# `hf-internal-testing/tiny-random-gpt2` or `pk-llama-3-8b` has only short words and is kept.
_KEY_LIKE = re.compile(r"\b(?:sk|hf|pk|rk|gsk|xai)[-_](?=[A-Za-z0-9_-]*[A-Za-z0-9]{12})[A-Za-z0-9_-]{12,}\b")
# `password=X`, `"api_key": "X"`, `secret:X`: a name (not a path's last part: `/etc/passwd: is a
# folder` keeps its words), then `=`, a quoted `:` or a `:` with no space, then the value.
_KEY_NAME = r"(?<![\w/\\.-])(?:api[_-]?key|access[_-]?token|token|secret|password|passwd)\b"
_KEY_PARAM = re.compile(
    r"(?P<name>" + _KEY_NAME + r"(?:\s*=\s*[\"']?|[\"']\s*:\s*[\"']?|:(?=[^\s\"'])))"
    r"(?P<value>[^\s\"'&,;}]+)",
    re.IGNORECASE,
)
# `token: X` with a space after the colon is also prose ("the token: expired"): redacted only when
# X looks like a credential (a digit in 8 or more characters, or 20 or more).
_KEY_PARAM_SPACED = re.compile(
    r"(?P<name>" + _KEY_NAME + r":\s+)(?P<value>(?=[^\s\"'&,;}]*\d)[^\s\"'&,;}]{8,}|[^\s\"'&,;}]{20,})",
    re.IGNORECASE,
)
_SECRET_FLAGS = ("--api-key", "--api_key", "--token", "--hf-token", "--password", "--secret", "--auth")
# The same flags inside a command line shown as text ("starting vllm serve m --api-key X").
_SECRET_FLAG_TEXT = re.compile(
    r"(?P<name>(?<!\S)(?:" + "|".join(re.escape(f) for f in _SECRET_FLAGS) + r")(?:=|\s+))(?P<value>[^\s\"']+)",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """`url` without the password (and user) of its userinfo: ``http://u:p@h`` → ``http://***@h``."""
    return _URL_USERINFO.sub(lambda m: m.group("scheme") + REDACTED + "@", url)


def redact(text: str) -> str:
    """`text` with every credential precmon can recognise replaced by ``***``."""
    if not isinstance(text, str) or not text:
        return text
    s = redact_url(text)
    s = _SECRET_FLAG_TEXT.sub(lambda m: m.group("name") + REDACTED, s)
    s = _AUTH_HEADER.sub(lambda m: m.group("name") + REDACTED, s)
    s = _BEARER.sub(lambda m: m.group("name") + REDACTED, s)
    s = _KEY_PARAM.sub(lambda m: m.group("name") + REDACTED, s)
    s = _KEY_PARAM_SPACED.sub(lambda m: m.group("name") + REDACTED, s)
    s = _KEY_LIKE.sub(REDACTED, s)
    return s


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with the values of secret flags (``--api-key X``, ``--token=X``) replaced."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if flag.lower() in _SECRET_FLAGS:
            if eq:
                out.append(flag + "=" + REDACTED)
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(redact(arg))
    return out


def redact_tree(value: object) -> object:
    """A JSON-like value (a results document, a journal record) with every credential redacted.

    Strings pass through `redact`; a list of strings is treated as a command line (`redact_argv`,
    so ``["--api-key", "X"]`` hides X); dict keys are kept (they are precmon's own names).
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(x, str) for x in value):
            return redact_argv(list(value))
        return [redact_tree(x) for x in value]
    return value
