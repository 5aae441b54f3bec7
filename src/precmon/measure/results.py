"""The results document, schema `precmon.results/1` (docs/design.md §5): build it, write it, read it.

The document is the typed model of precmon.core.schema (`ResultsDoc`, `VariantResult`, `Run`);
this module makes one for what was measured, writes it as strict JSON (atomically, credentials
redacted) and reads one back for `--resume`.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as _dt
import json
import os
import platform
import socket
import stat
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO, cast

from precmon import __version__
from precmon.core.schema import (
    NOT_A_RESULTS_FILE,
    SCHEMA,
    Gpu,
    Host,
    HostNode,
    PowerSource,
    ResultsDoc,
    VariantResult,
)
from precmon.core.schema.codec import from_json, to_json
from precmon.measure.checks import strict_json
from precmon.measure.trust.fingerprint import host_fingerprint, with_idle_baseline
from precmon.power.base import EnergyMeter, NodesMeter
from precmon.untrusted import redact_tree


def utc_now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def host_info(
    power_sources: list[dict[str, Any]] | None = None,
    gpus: list[dict[str, Any]] | None = None,
    meter: EnergyMeter | None = None,
) -> Host:
    """`host` of a results file, with its `fingerprint` (measure/trust/fingerprint.py)."""
    return Host(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        cpu_count=os.cpu_count(),
        gpus=[from_json(Gpu, g) for g in gpus or []],
        power_sources=[from_json(PowerSource, p) for p in power_sources or []],
        fingerprint=host_fingerprint(meter),
    )


def host_from_meter(meter: EnergyMeter | None) -> Host:
    """`host` of a results file from a power meter: GPUs (named by NVML) and the sources measured."""
    if meter is None:
        return host_info([], [])
    gpus = [{"name": c.label, "id": c.id} for c in meter.channels() if c.kind == "nvml"]
    sources = meter.power_sources_info()
    return dataclasses.replace(host_info(sources, gpus, meter), nodes=host_nodes(meter) or None)


def host_nodes(meter: EnergyMeter) -> list[HostNode]:
    """`host.nodes`: every other machine the meter reads (`--power-from`), with its channels."""
    if not isinstance(meter, NodesMeter):
        return []
    chans = [c for c in meter.channels() if c.has_watts and c.node is not None]
    return [
        HostNode(
            name=n.name,
            url=n.url,
            exporter=n.exporter,
            power_sources=[
                PowerSource(c.id, c.kind, c.label, c.scope, "counter" if c.has_energy_counter else "integrated")
                for c in chans
                if c.node == n.name
            ],
            unmeasured=n.unmeasured,
            problem=n.problem,
        )
        for n in meter.nodes()
    ]


def results_document(
    variants: Sequence[VariantResult],
    settings: dict[str, Any],
    host: Host | None = None,
    created: str | None = None,
) -> ResultsDoc:
    """A results file's document (docs/design.md §5) of `variants`, credentials redacted.

    The variants are copied (through their JSON, which is also where redaction applies), so the
    document stays as it was when made while a measurement goes on changing its records.
    """
    host = host or host_info()
    doc = ResultsDoc(
        created=created or utc_now_iso(),
        precmon_version=__version__,
        host=dataclasses.replace(host, fingerprint=with_idle_baseline(host.fingerprint, variants)),
        settings=settings,
        variants=list(variants),
    )
    # The last line of defence: a URL's password, a launch argv's --api-key, an Authorization
    # header echoed in an error body never reach a file or a screen.
    return redacted(doc)


def redacted(doc: ResultsDoc) -> ResultsDoc:
    """A copy of `doc` with credentials in every string replaced by `***` (untrusted.redact_tree)."""
    return from_json(ResultsDoc, cast(dict[str, Any], redact_tree(to_json(doc))))


def dumps_strict(doc: Any, indent: int | None = 2) -> str:
    """JSON text with no bare NaN/Infinity (docs/design.md §5 is strict JSON).

    Non-finite floats become null; when `doc` is an object, the places they were are listed
    under `non_finite`, so the file says what the server sent instead of silently dropping it.
    """
    notes: list[str] = []
    clean = strict_json(doc, "", notes)
    if notes and isinstance(clean, dict):
        before = clean.get("non_finite")
        clean["non_finite"] = (before if isinstance(before, list) else []) + notes
    return json.dumps(clean, indent=indent, ensure_ascii=False, allow_nan=False)


def write_json_atomic(path: Path, doc: ResultsDoc | dict[str, Any], make_parents: bool = True) -> None:
    """Write strict JSON so that a crash mid-write never leaves a truncated file.

    The temporary file has a unique name beside `path` and is removed when the write fails
    (disk full, folder gone), so a fault leaves neither a torn file nor a stray temporary.
    `make_parents=False` for a folder that must already exist (a deleted sweep folder is a fault,
    not something to recreate half-empty).
    """
    write_text_atomic(path, dumps_strict(to_json(doc) if isinstance(doc, ResultsDoc) else doc) + "\n", make_parents)


def write_text_atomic(path: Path, text: str, make_parents: bool = True, mode: int | None = None) -> None:
    """`write_json_atomic` for any text (a report export): never a torn file or a stray temporary.

    `mode`: the new file's permissions, set before it replaces the old one (mkstemp makes 0600).
    """
    path = Path(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _is_fd_link(path: Path) -> bool:
    """Whether `path` is, or links through, a process's open file (`/dev/stdout`, `/dev/fd/N`,
    `/proc/self/fd/N`): what it names is an fd's file, to be written at the fd, never replaced."""
    p, hops = str(path), 0
    while hops < 40:
        if p.startswith(("/proc/", "/dev/fd/")):
            return True
        if not os.path.islink(p):
            return False
        p, hops = os.path.join(os.path.dirname(p), os.readlink(p)), hops + 1
    return False


def write_json_output(dest: str | Path, doc: ResultsDoc) -> str:
    """Write a results document where a user's `--json` points; returns where it went, in words.

    `-` is stdout. A symlink is written through, never replaced by a regular file: `/dev/stdout`
    and other links to an open file (a pipe, a terminal, a file the shell redirected) are written
    as a stream, like a device or a FIFO; a link to a regular file gets the atomic write at its
    target. Raises OSError as the system reports it.
    """
    return write_output(dest, dumps_strict(to_json(doc)) + "\n")


def write_output(dest: str | Path, text: str) -> str:
    """`write_json_output` for any text: `-` is stdout, links and devices written through, a
    regular file (or a link's target) replaced atomically; returns where it went, in words."""
    if str(dest) == "-":
        write_stream(sys.stdout, text)
        return "stdout"
    path = Path(dest)
    try:
        mode: int | None = os.stat(path).st_mode  # follows links
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a folder", str(dest))
    if (mode is not None and not stat.S_ISREG(mode)) or _is_fd_link(path):
        # A pipe, terminal, device or an fd's file: stream it. Appending, because reopening an fd's
        # file with "w" would truncate what the shell redirected there (`>> log`) and what we printed.
        sys.stdout.flush()
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        return str(dest)
    write_text_atomic(Path(os.path.realpath(path)) if path.is_symlink() else path, text)
    return str(dest)


def write_stream(stream: TextIO, text: str) -> None:
    """Data (an export, a results document) on a text stream as UTF-8 bytes whatever the locale's
    encoding, so a command's output never depends on the locale; a stream without bytes beneath
    (a StringIO) takes the text as it is."""
    buffer, encoding = getattr(stream, "buffer", None), getattr(stream, "encoding", None)
    if buffer is None or not encoding or codecs.lookup(encoding).name == "utf-8":
        stream.write(text)
        stream.flush()
        return
    stream.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def output_problem(dest: str | Path) -> str | None:
    """Why `--json DEST` cannot be written (checked before minutes of measuring), or None."""
    if str(dest) == "-":
        return None
    path = Path(dest)
    if path.is_dir():  # follows links
        return "is a folder"
    if path.exists() and (_is_fd_link(path) or not path.is_file()):
        return None if os.access(path, os.W_OK) else "is not writable"
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        return f"folder {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"folder {parent} is not writable"
    return None


class ResultsError(ValueError):
    """A results file is not a precmon results document."""


def load_results(path: Path) -> dict[str, Any]:
    """A results file's JSON object (the schema checked; its records are checked as they are
    read, `codec.load`)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ResultsError(f"{path}: no such file") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from exc
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise ResultsError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: {NOT_A_RESULTS_FILE}")
    return doc
