#!/usr/bin/env bash
# One-time setup on a fresh machine: system packages, a virtual environment in .venv,
# torch's CPU wheel, and voicelab with its dependencies. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TEST=0
for a in "$@"; do [ "$a" = "--test" ] && WITH_TEST=1; done

need_apt=()
command -v espeak-ng >/dev/null 2>&1 || need_apt+=(espeak-ng)
command -v sox >/dev/null 2>&1 || need_apt+=(sox)
dpkg -s libsndfile1 >/dev/null 2>&1 || need_apt+=(libsndfile1)
if [ "$WITH_TEST" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium chromium-driver)
fi
if [ "${#need_apt[@]}" -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
# torch first, from the CPU wheel: a bare "torch" requirement would pull a multi-GB CUDA build.
.venv/bin/python -c "import torch" 2>/dev/null || $PIP install "torch==2.13.0"
if [ "$WITH_TEST" = 1 ]; then $PIP install -e ".[dev]"; else $PIP install -e .; fi
echo "voicelab setup done: $(.venv/bin/python -c 'import torch, pipecat; print("torch", torch.__version__, "| pipecat", pipecat.__version__)' 2>/dev/null)"
