#!/usr/bin/env bash
# Every test: the Rust suite (through the C ABI, no TensorFlow), then the Python suite against real
# TensorFlow with the plugin installed into the venv. .ci/run calls this.
set -euo pipefail
# The whole script is one block, read before any of it runs: editing this file while CI runs it
# (an hour) cannot change what the running copy does next.
{
cd "$(dirname "$0")/.."
source scripts/setup.sh
export TF_INCLUDE_DIR="$(TF_CPP_MIN_LOG_LEVEL=3 "$VENV/bin/python" -c 'import tensorflow as tf, os; print(os.path.join(os.path.dirname(tf.__file__), "include"))')"

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
# The wheel packages the library just built and tested (TF_WGPU_PREBUILT_LIB): setup.py's own
# `cargo build --lib` would resolve other naga features than the tests' build and recompile.
TF_WGPU_PREBUILT_LIB=1 "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps -w target/wheels .
WHEEL="$(ls target/wheels/tensorflow_wgpu-*.whl)"
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
# The Python suites run in two lanes at once. Most of them keep one core busy (one Python thread
# driving small kernels: the op suite ran at 97% of one core of a 2-core machine), so two lanes
# share a CI machine's two cores better than the suites take turns; together they took 57 minutes
# one after another. Each job's output goes to target/ci-logs/<job>.log; a line reports each job as
# it ends, and every log prints, in lane order, once both lanes are done.
# The installed plugin is what `import tensorflow` loads; make sure no stale path overrides it.
unset TF_PLUGGABLE_DEVICE_LIBRARY_PATH
export TF_CPP_MIN_LOG_LEVEL=2
CI_LOGS="$PWD/target/ci-logs"
rm -rf "$CI_LOGS"
mkdir -p "$CI_LOGS"
PYTEST=(-m pytest -q -p no:cacheprovider)

# macOS (Metal) and Windows (DX12) builds: the whole crate, tests and examples included, checks and
# lints clean for each (issue 21). Only the standard library of each target is needed, no SDK.
# clippy type-checks everything cargo check does (and fails on its errors), so one pass does both.
CROSS_TARGETS="aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-msvc"
cross_clippy() {
  rustup target add $CROSS_TARGETS >/dev/null 2>&1 || rustup target add $CROSS_TARGETS
  for target in $CROSS_TARGETS; do
    cargo clippy -q --release --all-targets --target "$target" -- -D warnings || return 1
    echo "$target: check and clippy clean"
  done
}

suite_main() {
  "$VENV/bin/python" "${PYTEST[@]}" --durations=30 tests/python --ignore=tests/python/test_ops.py
}
suite_ops() {
  "$VENV/bin/python" "${PYTEST[@]}" --durations=10 tests/python/test_ops.py
}
# The same kernels on a device opened with the smallest limits of Metal, DX12 and Vulkan, without
# subgroups or float16: the guarded fallbacks (unbatched elementwise launches, the plain tiles) run.
suite_portable() {
  TF_WGPU_PORTABLE_LIMITS=1 "$VENV/bin/python" "${PYTEST[@]}" \
    tests/python/test_plugin.py tests/python/test_models.py tests/python/test_conv_grads.py
}
# The GPU kernel profile, what every non-CPU adapter runs (workgroup-tiled products, the implicit-GEMM
# convolution, 32 invocations a softmax row), forced onto lavapipe so that both profiles stay
# correct: the op suite's cases of the kernels the profile switches (products, and the convolutions,
# einsums, fused ops and RNN cells built on them; softmax and cross-entropy rows), the convolution
# gradients, layouts and model inference (issue 18). TF_WGPU_GPU_PROFILE_ALL=1 runs the whole op
# suite under it. (The op suite's own GPU-profile tests set TF_WGPU_KERNELS=gpu in their
# subprocesses and run with it.)
GPU_PROFILE_OPS="(MatMul or Conv or Depthwise or Einsum or Fused or RNN or LSTM or GRU or Softmax or CrossEntropy) and not past_the_dispatch_grid"
if [ "${TF_WGPU_GPU_PROFILE_ALL:-0}" = 1 ]; then GPU_PROFILE_OPS=""; fi
suite_gpu_profile() {
  local status=0
  TF_WGPU_KERNELS=gpu "$VENV/bin/python" "${PYTEST[@]}" tests/python/test_ops.py -k "$GPU_PROFILE_OPS" || status=1
  TF_WGPU_KERNELS=gpu "$VENV/bin/python" "${PYTEST[@]}" \
    tests/python/test_conv_grads.py tests/python/test_layouts.py tests/python/test_models.py || status=1
  return "$status"
}

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
suite_old_tf() {
  local old_tf="$1" old_venv="$PWD/.venv-tf$1" files="$OLD_TF_FILES" tests=()
  TF_VERSION="$old_tf" VENV="$old_venv" bash scripts/setup.sh || return 1
  "$old_venv/bin/pip" install -q --force-reinstall --no-deps "$WHEEL" || return 1
  if [ "${TF_WGPU_OLD_TF_ALL:-0}" = 1 ]; then
    tests=(tests/python)
  else
    case "$old_tf" in 2.16.*) files="$files $VARIABLE_ROUTE_FILES" ;; esac
    for file in $files; do tests+=("tests/python/$file"); done
  fi
  "$old_venv/bin/python" "${PYTEST[@]}" --durations=5 "${tests[@]}"
}

# Runs one job into its log; a job's failure is recorded and the lane goes on. (A function called
# left of `||` runs without `set -e`: each job returns its own failures.)
run_job() {
  local name="$1" begin=$SECONDS status=0
  shift
  "$@" >"$CI_LOGS/$name.log" 2>&1 || status=$?
  echo "$status" >"$CI_LOGS/$name.status"
  echo "== $name: exit $status after $((SECONDS - begin)) s"
}
# Lane A: the cross-target checks (a compile, on the core lane B's op suite leaves free), the TF
# 2.21 suite but its op suite, then the portable limits. Lane B: the 2.21 op suite, the older TFs,
# then the GPU profile. (Locally the lanes took 39 and 35 minutes with the GPU profile in lane A.)
LANE_A_JOBS="cross-clippy tf$TF_VERSION tf$TF_VERSION-portable-limits"
# (Not TF_VERSION itself: its jobs' logs would collide with lane A's.)
OLD_TFS="$(for v in ${OLD_TF_VERSIONS:-2.19.1 2.16.2}; do [ "$v" = "$TF_VERSION" ] || printf '%s ' "$v"; done)"
LANE_B_JOBS="tf$TF_VERSION-ops$(for v in $OLD_TFS; do printf ' tf%s' "$v"; done) tf$TF_VERSION-gpu-profile"
echo "== the Python suites and the cross-target checks, in two lanes: [$LANE_A_JOBS] and [$LANE_B_JOBS]"
(
  run_job cross-clippy cross_clippy
  run_job "tf$TF_VERSION" suite_main
  run_job "tf$TF_VERSION-portable-limits" suite_portable
) &
LANE_A=$!
(
  run_job "tf$TF_VERSION-ops" suite_ops
  for old_tf in $OLD_TFS; do run_job "tf$old_tf" suite_old_tf "$old_tf"; done
  run_job "tf$TF_VERSION-gpu-profile" suite_gpu_profile
) &
LANE_B=$!
wait "$LANE_A" "$LANE_B" || true

FAILED=()
for job in $LANE_A_JOBS $LANE_B_JOBS; do
  status="$(cat "$CI_LOGS/$job.status" 2>/dev/null || echo missing)"
  echo
  echo "== $job (exit $status): target/ci-logs/$job.log"
  cat "$CI_LOGS/$job.log" 2>/dev/null || true
  if [ "$status" != 0 ]; then FAILED+=("$job"); fi
done
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "== failed: ${FAILED[*]}"
  exit 1
fi
echo "== every job passed"
exit 0
}
