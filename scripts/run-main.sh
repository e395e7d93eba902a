#!/usr/bin/env bash
# The main job: build the plugin (release), install it into the venv with tensorflow-cpu, and run a
# real TF program on the WGPU device (lavapipe when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
echo "== pip install . (cargo build --release, then into site-packages/tensorflow-plugins)"
"$VENV/bin/pip" install -q --no-build-isolation .
echo "== running examples/python/run_on_wgpu.py"
TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-1}" "$VENV/bin/python" examples/python/run_on_wgpu.py
