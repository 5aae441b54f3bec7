#!/usr/bin/env bash
# The README's test command. Two passes: the unit tests in two xdist workers (most of them wait on
# sockets and sleeps, not on the CPU: on 2 cores 283-293 s; three took 213-239 s and four 191-207 s,
# but load-sensitive tests failed under them in CI runs: a TUI race, a port taken by another worker,
# node power reads past their deadline), then, alone in one process, the tests whose figures depend
# on a quiet machine: the integration tests (real llama-server and vLLM servers, timed) and the unit
# tests that compare wall-clock figures with a known truth (marker `timing`) and those that need the
# machine's ports and process groups to themselves (marker `alone`). Arguments go to both
# passes (e.g. `-x`, `-k quality`). The second lists its 25 slowest steps (where CI's time goes).
set -uo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
# Both passes run whatever the first gave; the exit status is the first failure's.
status=0
"$py" -m pytest -m 'not integration and not timing and not alone' -n 2 -q "$@" || status=$?
"$py" -m pytest -m 'integration or timing or alone' --durations=25 "$@" || { [ "$status" -ne 0 ] || status=$?; }
exit "$status"
