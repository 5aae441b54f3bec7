"""Find the llama.cpp tree inside a source tarball and say which llama.cpp it is.

Three layouts reach `build_llama`: the llama-cpp-python sdist (`llama_cpp_python-V/vendor/llama.cpp/`,
what `pip download` fetches and what a user without network copies over), a bare llama.cpp tree
packed at the archive root, and a tree under one top folder (`git archive --prefix=llama.cpp/`).
The tree is where `CMakeLists.txt` sits beside `ggml/`.

Which llama.cpp: the sdist vendors it as a git submodule, and the sdist keeps the submodule's git
directory (`.git/modules/vendor/llama.cpp/HEAD` holds the commit) and its own `PKG-INFO`; `git
archive` writes the commit into the tar's pax `comment` header. The history is shallow in both, so
the build number (`bN`) cannot be known and is never guessed; the commit goes to cmake as
`LLAMA_BUILD_COMMIT`, so `llama-server`'s `/props` `build_info` names it instead of `unknown`.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SKIP = ("docs/", "media/", "examples/", "tests/", ".git")  # never built: smaller, faster extraction
_KEEP_MODELS = ("models/ggml-vocab-llama-spm.gguf",)  # the tokenizer-only vocab the test models use


class SourceError(ValueError):
    """The tarball holds no llama.cpp tree; the message says what was looked for."""


@dataclass(frozen=True)
class SourceInfo:
    """Where the tree is in the archive and which llama.cpp it is (None: not recorded there)."""

    prefix: str  # "" for a tree at the archive root, else ending in "/"
    layout: str  # "llama-cpp-python sdist", "llama.cpp tree"
    commit: str | None
    llama_cpp_python: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"layout": self.layout, "llama_cpp_commit": self.commit, "llama_cpp_python": self.llama_cpp_python}

    def describe(self) -> str:
        commit = f"llama.cpp {self.commit[:7]}" if self.commit else "llama.cpp (commit not recorded in the archive)"
        return commit + (f", vendored by llama-cpp-python {self.llama_cpp_python}" if self.llama_cpp_python else "")


def inspect_source(tarball: Path) -> SourceInfo:
    """Read the archive's member list (and two small files) without extracting the tree."""
    try:
        with tarfile.open(tarball) as tar:
            names = {m.name.removeprefix("./"): m for m in tar.getmembers()}
            prefix = _tree_prefix(names)
            if prefix is None:
                raise SourceError(
                    f"{tarball}: no llama.cpp tree (CMakeLists.txt beside ggml/) at the root, under one top "
                    "folder, or at llama_cpp_python-V/vendor/llama.cpp/ (the llama-cpp-python sdist)"
                )
            if prefix.endswith("/vendor/llama.cpp/"):
                top = prefix.removesuffix("vendor/llama.cpp/")
                head = _read(tar, names.get(top + ".git/modules/vendor/llama.cpp/HEAD"))
                pkg = _read(tar, names.get(top + "PKG-INFO"))
                version = next(
                    (ln.split(":", 1)[1].strip() for ln in pkg.splitlines() if ln.startswith("Version:")), None
                )
                return SourceInfo(prefix, "llama-cpp-python sdist", _commit(head), version or None)
            return SourceInfo(prefix, "llama.cpp tree", _commit(tar.pax_headers.get("comment", "")), None)
    except (tarfile.TarError, OSError) as exc:
        raise SourceError(f"{tarball}: not a readable tar archive ({exc})") from exc


def extract_tree(tarball: Path, info: SourceInfo, dest: Path) -> None:
    """Extract the tree's buildable part into dest (which the caller renames into place)."""
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("./")
            if not name.startswith(info.prefix):
                continue
            rel = name[len(info.prefix) :]
            if not rel or rel.startswith(_SKIP) or (rel.startswith("models/") and rel not in _KEEP_MODELS):
                continue
            if not (member.isfile() or member.isdir()):
                continue
            member.name = rel
            tar.extract(member, dest, filter="data")


def _tree_prefix(names: dict[str, tarfile.TarInfo]) -> str | None:
    tops = {n.split("/", 1)[0] + "/" for n in names if "/" in n}
    candidates = [""] + sorted(tops) + sorted(t + "vendor/llama.cpp/" for t in tops)
    for prefix in candidates:
        if prefix + "CMakeLists.txt" in names and any(n.startswith(prefix + "ggml/") for n in names):
            return prefix
    return None


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo | None) -> str:
    if member is None or not member.isfile() or member.size > 65536:
        return ""
    f = tar.extractfile(member)
    return f.read().decode("utf-8", "replace") if f is not None else ""


def _commit(text: str) -> str | None:
    text = text.strip()
    return text if _COMMIT.match(text) else None
