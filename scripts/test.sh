#!/usr/bin/env bash
# The README's test command. Two passes: the unit tests in two xdist workers (most of them wait on
# sockets and sleeps, not on the CPU), then, alone in one process, the tests whose figures depend on
# a quiet machine: the integration tests (real llama-server and vLLM servers, timed) and the unit
# tests that compare wall-clock figures with a known truth (marker `timing`). Arguments go to both
# passes (e.g. `-x`, `-k quality`).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
"$py" -m pytest -m 'not integration and not timing' -n 2 -q "$@"
"$py" -m pytest -m 'integration or timing' "$@"
