"""The llama.cpp tree is found in the sdist, a bare tree and a git-archive tree, and its commit is read.

gpu_proof's `--source-tarball` took only a bare tree: a user passing the llama-cpp-python sdist got
"no CMakeLists.txt", and the build said `unknown` for its version.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from precmon.testbed import llama_build
from precmon.testbed.llama_source import SourceError, extract_tree, inspect_source

COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
TREE = {
    "CMakeLists.txt": "project(llama.cpp)\n",
    "ggml/CMakeLists.txt": "project(ggml)\n",
    "tools/server/server.cpp": "int main() {}\n",
    "models/ggml-vocab-llama-spm.gguf": "vocab",
    "models/ggml-vocab-other.gguf": "other",
    "docs/build.md": "docs",
}


def _pack(path: Path, files: dict[str, str], pax: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers=pax or {}) as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _sdist(tmp_path: Path) -> Path:
    top = "llama_cpp_python-0.3.36/"
    files = {top + "vendor/llama.cpp/" + k: v for k, v in TREE.items()}
    files[top + "PKG-INFO"] = "Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36\n"
    files[top + ".git/modules/vendor/llama.cpp/HEAD"] = COMMIT + "\n"
    files[top + "llama_cpp/__init__.py"] = "__version__ = '0.3.36'\n"
    return _pack(tmp_path / "llama_cpp_python-0.3.36.tar.gz", files)


def test_the_sdist_is_found_with_its_commit_and_version(tmp_path: Path) -> None:
    info = inspect_source(_sdist(tmp_path))
    assert (info.prefix, info.layout) == ("llama_cpp_python-0.3.36/vendor/llama.cpp/", "llama-cpp-python sdist")
    assert (info.commit, info.llama_cpp_python) == (COMMIT, "0.3.36")
    assert info.describe() == "llama.cpp 0c1e570, vendored by llama-cpp-python 0.3.36"
    dest = tmp_path / "src"
    extract_tree(_sdist(tmp_path), info, dest)
    got = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert got == [
        "CMakeLists.txt",
        "ggml/CMakeLists.txt",
        "models/ggml-vocab-llama-spm.gguf",
        "tools/server/server.cpp",
    ]


def test_a_bare_tree_and_a_git_archive_tree(tmp_path: Path) -> None:
    bare = inspect_source(_pack(tmp_path / "bare.tar.gz", TREE))
    assert (bare.prefix, bare.commit, bare.llama_cpp_python) == ("", None, None)
    assert "commit not recorded" in bare.describe()
    archived = _pack(tmp_path / "ga.tar.gz", {"llama.cpp/" + k: v for k, v in TREE.items()}, {"comment": COMMIT})
    info = inspect_source(archived)
    assert (info.prefix, info.commit) == ("llama.cpp/", COMMIT)


def test_a_tarball_without_a_tree_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"no llama.cpp tree .*llama_cpp_python-V/vendor/llama.cpp/"):
        inspect_source(_pack(tmp_path / "x.tar.gz", {"README.md": "hi", "src/CMakeLists.txt": ""}))
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(SourceError, match="not a readable tar archive"):
        inspect_source(tmp_path / "junk.tar.gz")


def test_extraction_records_the_source_and_cmake_gets_the_commit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    build = llama_build.build_for("cuda")
    llama_build.extract_source(_sdist(tmp_path), build.source_dir)
    assert llama_build.source_record(build) == {
        "layout": "llama-cpp-python sdist",
        "llama_cpp_commit": COMMIT,
        "llama_cpp_python": "0.3.36",
    }
    calls: list[list[str]] = []
    monkeypatch.setattr(llama_build.shutil, "which", lambda _: "/usr/bin/cmake")
    monkeypatch.setattr(llama_build, "_run", lambda step, argv, **_: calls.append(argv))
    with pytest.raises(llama_build.BuildError, match="not produced"):
        llama_build._build(build, "cuda", 1, None)
    assert "-DLLAMA_BUILD_COMMIT=0c1e570" in calls[0]
    assert json.loads((build.root / "SOURCE.json").read_text())["llama_cpp_commit"] == COMMIT


@pytest.mark.parametrize("where", ["env", "dl"])
def test_a_machine_without_network_builds_from_a_tarball_it_was_given(tmp_path, monkeypatch, where):
    """Headless on a machine with no registry: `$PRECMON_LLAMA_SOURCE` names a source tarball, or the
    sdist lies in `<cache>/dl/` already; neither runs pip."""
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    tree = _pack(tmp_path / "llama.cpp.tar.gz", {"llama.cpp/" + k: v for k, v in TREE.items()}, {"comment": COMMIT})
    if where == "env":
        monkeypatch.setenv("PRECMON_LLAMA_SOURCE", str(tree))
    else:
        monkeypatch.delenv("PRECMON_LLAMA_SOURCE", raising=False)
        (tmp_path / "cache" / "dl").mkdir(parents=True)
        _sdist(tmp_path / "cache" / "dl")
    steps: list[str] = []
    monkeypatch.setattr(llama_build.shutil, "which", lambda _: "/usr/bin/cmake")
    monkeypatch.setattr(llama_build, "_run", lambda step, argv, **_: steps.append(step))
    with pytest.raises(llama_build.BuildError, match="not produced"):
        llama_build.build_llama("cpu")
    build = llama_build.build_for("cpu")
    assert steps == ["configure", "compile"]  # no "download llama.cpp source"
    assert (build.source_dir / "tools" / "server" / "server.cpp").exists()
    layout = "llama.cpp tree" if where == "env" else "llama-cpp-python sdist"
    assert llama_build.source_record(build) == {
        "layout": layout,
        "llama_cpp_commit": COMMIT,
        "llama_cpp_python": None if where == "env" else "0.3.36",
    }
