#!/usr/bin/env bash
# Every test: the Rust suite (through the C ABI, no TensorFlow), then the Python suite against real
# TensorFlow with the plugin installed into the venv. .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
export TF_INCLUDE_DIR="$(TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c 'import tensorflow as tf, os; print(os.path.join(os.path.dirname(tf.__file__), "include"))')"

# macOS (Metal) and Windows (DX12) builds: the whole crate, tests and examples included, checks and
# lints clean for each (issue 21). Only the standard library of each target is needed, no SDK.
CROSS_TARGETS="aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc"
# clippy type-checks everything cargo check does (and fails on its errors), so one pass does both.
echo "== cargo clippy --all-targets -D warnings (a full type check) for $CROSS_TARGETS"
rustup target add $CROSS_TARGETS >/dev/null 2>&1 || rustup target add $CROSS_TARGETS
for target in $CROSS_TARGETS; do
  cargo clippy -q --release --all-targets --target "$target" -- -D warnings
  echo "$target: check and clippy clean"
done

# The release profile throughout: the Rust tests, the C-ABI walk and the wheel share one build of
# the dependencies.
echo "== cargo test --release"
cargo test --release --all-targets 2>&1 | grep -v "XDG_RUNTIME_DIR"
# On the tests' build: the dev-dependencies' extra naga features unify into it, so a plain
# `cargo build --lib` here would rebuild the wgpu stack twice over (for the library, then for the
# example). `--all-targets` keeps that feature set and only links the cdylib, which `cargo test`
# does not write.
echo "== cargo run --example registration (a load-and-walk of the release library through the C ABI)"
cargo build -q --release --all-targets
cargo run -q --release --example registration | tail -3

echo "== build the plugin wheel once (release), install it into the TF $TF_VERSION venv"
rm -rf target/wheels
"$VENV/bin/pip" wheel -q --no-build-isolation --no-deps -w target/wheels .
WHEEL="$(ls target/wheels/tensorflow_wgpu-*.whl)"
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
echo "== pytest tests/python (TF $TF_VERSION)"
# The installed plugin is what `import tensorflow` loads; make sure no stale path overrides it.
unset TF_PLUGGABLE_DEVICE_LIBRARY_PATH
TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m pytest -q --durations=30 tests/python
# The same kernels on a device opened with the smallest limits of Metal, DX12 and Vulkan, without
# subgroups or float16: the guarded fallbacks (unbatched elementwise launches, the plain tiles) run.
echo "== TF $TF_VERSION with TF_WGPU_PORTABLE_LIMITS=1"
TF_WGPU_PORTABLE_LIMITS=1 TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/python/test_plugin.py tests/python/test_models.py tests/python/test_conv_grads.py
# The GPU kernel profile, what every non-CPU adapter runs (workgroup-tiled products, the implicit-GEMM
# convolution, 32 invocations a softmax row), forced onto lavapipe so that both profiles stay
# correct: the op suite's cases of the kernels the profile switches (products, and the convolutions,
# einsums, fused ops and RNN cells built on them; softmax and cross-entropy rows), the convolution
# gradients, layouts and model inference (issue 18). TF_WGPU_GPU_PROFILE_ALL=1 runs the whole op
# suite under it.
GPU_PROFILE_OPS="MatMul or Conv or Depthwise or Einsum or Fused or RNN or LSTM or GRU or Softmax or CrossEntropy or gpu"
if [ "${TF_WGPU_GPU_PROFILE_ALL:-0}" = 1 ]; then GPU_PROFILE_OPS=""; fi
echo "== TF $TF_VERSION with TF_WGPU_KERNELS=gpu"
TF_WGPU_KERNELS=gpu TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/python/test_ops.py -k "$GPU_PROFILE_OPS"
TF_WGPU_KERNELS=gpu TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/python/test_conv_grads.py tests/python/test_layouts.py tests/python/test_models.py

# The same built library on older TensorFlows: symbols are resolved at run time and struct sizes
# respected, so one binary serves them all (2.16 also exports the variable functions that make eager
# variable updates run). There CI runs the op suite and what depends on TF's version: loading,
# placement, XLA requests, cuDNN RNN ops, TF's memory APIs and the profiler on both; the variable routes
# (sparse updates, Keras training, out of memory) on 2.16, the one whose route differs from 2.21's
# (kernels, where 2.19 rewrites graphs and wraps eager updates in functions as 2.21 does; 2.21 runs
# them in full). The kernels' own suites (gradients, layouts, big tensors, bad input, Keras RNN
# models, model inference) run on 2.21 only, as do the heavy ones (the zoo among them). TF_WGPU_OLD_TF_ALL=1 runs every
# file on both (with TF_WGPU_HEAVY=1 and TF_WGPU_ZOO=1, all of it).
OLD_TF_FILES="test_ops.py test_loading.py test_plugin.py test_xla_requests.py test_rnn_ops.py test_memory.py test_profiler.py"
VARIABLE_ROUTE_FILES="test_sparse_updates.py test_training.py test_robustness.py"
CI_LOGS="$PWD/target/ci-logs"
mkdir -p "$CI_LOGS"
OLD_PIDS=()
OLD_LOGS=()
OLD_NAMES=()
for OLD_TF in ${OLD_TF_VERSIONS:-2.19.1 2.16.2}; do
  if [ "${TF_WGPU_OLD_TF_ALL:-0}" = 1 ]; then
    OLD_TF_TESTS=(tests/python)
  else
    OLD_TF_TESTS=()
    FILES="$OLD_TF_FILES"
    case "$OLD_TF" in 2.16.*) FILES="$FILES $VARIABLE_ROUTE_FILES" ;; esac
    for file in $FILES; do OLD_TF_TESTS+=("tests/python/$file"); done
  fi
  OLD_VENV="$PWD/.venv-tf$OLD_TF"
  echo "== the same wheel on TF $OLD_TF (set up; its tests start in the background)"
  TF_VERSION="$OLD_TF" VENV="$OLD_VENV" bash scripts/setup.sh
  "$OLD_VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
  # The older TFs' suites run at once: each is mostly one Python thread waiting on small kernels, so
  # two share the two cores of a CI machine better than they take turns. Their logs print in order.
  OLD_LOG="$CI_LOGS/pytest-tf$OLD_TF.log"
  TF_CPP_MIN_LOG_LEVEL=2 "$OLD_VENV/bin/python" -m pytest -q --durations=5 "${OLD_TF_TESTS[@]}" >"$OLD_LOG" 2>&1 &
  OLD_PIDS+=("$!")
  OLD_LOGS+=("$OLD_LOG")
  OLD_NAMES+=("$OLD_TF")
done
OLD_STATUS=0
for i in "${!OLD_PIDS[@]}"; do
  STATUS=0
  wait "${OLD_PIDS[$i]}" || STATUS=$?
  echo "== pytest on TF ${OLD_NAMES[$i]} (exit $STATUS)"
  cat "${OLD_LOGS[$i]}"
  if [ "$STATUS" != 0 ]; then OLD_STATUS=1; fi
done
exit "$OLD_STATUS"
