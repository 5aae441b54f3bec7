#!/usr/bin/env bash
# Install precmon into ./.venv with its test tools, and the system tools the demo and the tests
# need (cmake and g++ to build llama-server, python3-venv, tmux) when they are missing.
# Works as root or as a user with sudo, on Debian/Ubuntu.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "[install] apt-get install ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

echo "[install] python environment in .venv"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
echo "[install] done: .venv/bin/precmon --help"
