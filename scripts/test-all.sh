#!/usr/bin/env bash
# Every test: the Rust suite (through the C ABI, no TensorFlow), then the Python suite against real
# TensorFlow with the plugin installed into the venv. .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export TF_INCLUDE_DIR="$(TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c 'import tensorflow as tf, os; print(os.path.join(os.path.dirname(tf.__file__), "include"))')"

echo "== cargo test"
cargo test --all-targets 2>&1 | grep -v "XDG_RUNTIME_DIR" 
echo "== cargo run --example registration (dlopen walk of the debug library)"
cargo build -q --lib
cargo run -q --example registration | tail -3

echo "== pip install . (release build of the plugin)"
"$VENV/bin/pip" install -q --no-build-isolation .
echo "== pytest tests/python"
# The installed plugin is what `import tensorflow` loads; make sure no stale path overrides it.
unset TF_PLUGGABLE_DEVICE_LIBRARY_PATH
TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m pytest -q --durations=10 tests/python
