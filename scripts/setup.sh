#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian/Ubuntu machine: Mesa's software Vulkan
# (lavapipe) and the Vulkan loader, a C compiler, a venv with tensorflow-cpu, pytest and
# scikit-learn, and one with xprof.
# Idempotent; sourced by run-main.sh and test-all.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

TF_VERSION="${TF_VERSION:-2.21.0}"
VENV="${VENV:-$PWD/.venv}"

need_apt=()
[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ] || [ -n "$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null)" ] || need_apt+=(mesa-vulkan-drivers)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' || need_apt+=(libvulkan1)
command -v cc >/dev/null || need_apt+=(gcc)
command -v python3 >/dev/null || need_apt+=(python3 python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "setup: cargo not found; install Rust (https://rustup.rs)" >&2; exit 1; }

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import tensorflow as tf, sys; sys.exit(tf.__version__ != '$TF_VERSION')" 2>/dev/null; then
  echo "setup: installing tensorflow-cpu==$TF_VERSION into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "tensorflow-cpu==$TF_VERSION" numpy pytest "setuptools>=64" wheel scikit-learn \
    "tensorboard~=${TF_VERSION%.*}.0"
fi
# scikit-learn ships the digits data set the training tests fit on (no download); Keras's
# TensorBoard callback (the profiler tests) needs tensorboard, which TF 2.21 no longer installs (the
# one of TF's own version: a newer one may want another protobuf).
"$VENV/bin/python" -c "import pytest, wheel, sklearn, tensorboard" 2>/dev/null \
  || "$VENV/bin/pip" install -q pytest "setuptools>=64" wheel scikit-learn "tensorboard~=${TF_VERSION%.*}.0"
# xprof (TensorBoard's profile plugin) reads the profiler tests' XSpace files: op profile, trace
# viewer, memory profile. A venv of its own keeps its dependencies away from TF's.
XPROF_VENV="${XPROF_VENV:-$PWD/.venv-xprof}"
if ! "$XPROF_VENV/bin/python" -c "import xprof.convert.raw_to_tool_data" 2>/dev/null; then
  echo "setup: installing xprof into $XPROF_VENV"
  python3 -m venv "$XPROF_VENV"
  "$XPROF_VENV/bin/pip" install -q xprof
fi
# The Vulkan loader complains on every start without it; harmless, but noisy.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
