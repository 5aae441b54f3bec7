"""Shared fixtures: the real llama-server test bed and CI-strict skipping.

A test that needs something absent skips with the reason — except under CI (CI=true), where
the same condition fails the test: CI must never silently skip the integration tests.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests send SIGINT to precmon and expect KeyboardInterrupt. A shell without job control
    starts its background jobs (`cmd &`) with SIGINT ignored, the ignore passes through exec, and
    Python then installs no SIGINT handler: 12 such tests failed that way (exit 0 or -9, not 130).
    A handler here is reset to the default at exec, so precmon's processes get their own."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _bench_folders_in_tmp(tmp_path_factory):
    """A bench without `--out` writes into $PRECMON_BENCH_DIR (else the cache's bench/): the tests'
    benches, in process or in a subprocess, go to a temporary folder, not the user's cache."""
    os.environ["PRECMON_BENCH_DIR"] = str(tmp_path_factory.mktemp("bench"))
    yield
    os.environ.pop("PRECMON_BENCH_DIR", None)


def require(condition: bool, reason: str) -> None:
    """Skip (locally) or fail (in CI) when `condition` is false."""
    if not condition:
        if IN_CI:
            pytest.fail(f"required in CI: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def llama_build():
    """The cached CPU llama.cpp build; built here (about 5 min, once) when absent."""
    from precmon.testbed.llama_build import BuildError, build_for, build_llama

    b = build_for("cpu")
    if not b.is_complete():
        print("\n[tests] building llama-server once (about 5 min on 2 cores)...", file=sys.stderr)
        try:
            b = build_llama("cpu")
        except BuildError as exc:
            require(False, f"llama-server could not be built: {exc}")
    return b


@pytest.fixture(scope="session")
def tiny_models(llama_build) -> dict[str, Path]:
    from precmon.testbed.models import make_models

    return make_models("tiny", build=llama_build)


@pytest.fixture(scope="session")
def real_ladder(llama_build) -> dict[str, Path]:
    """SmolLM2-135M-Instruct (the real model) as F16 / Q8_0 / Q4_0 / NVFP4 / MXFP4, cached."""
    from precmon.testbed.real_model import ModelFetchError, make_ladder

    try:
        return make_ladder(llama_build)
    except ModelFetchError as exc:
        require(False, f"the real model could not be fetched: {exc}")
        raise


@pytest.fixture(scope="session")
def llama_server_factory(llama_build, tmp_path_factory):
    """Start llama-servers on demand; every one is stopped at the end of the session."""
    from precmon.testbed.server import start_llama_server

    started = []

    def start(**kwargs):
        log = tmp_path_factory.mktemp("llama") / "server.log"
        proc = start_llama_server(llama_build.tool("llama-server"), log, **kwargs)
        started.append(proc)
        return proc

    yield start
    for p in started:
        p.stop()


@pytest.fixture(scope="session")
def router_server(llama_server_factory, tiny_models):
    """llama-server in router mode over tiny-F16 / tiny-Q8_0 / tiny-Q4_K_M."""
    models_dir = tiny_models["F16"].parent
    return llama_server_factory(models_dir=models_dir, ctx_tokens=2048)
