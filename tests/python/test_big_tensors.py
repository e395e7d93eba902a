"""Tensors larger than one storage binding (issue 16): every op family on tensors of 1.5x
`max_storage_buffer_binding_size`, on /GPU:0 against TF-CPU (big_tensor_worker.py, in its own
process).

The fast run lowers the plugin's binding limit to 64 KiB (TF_WGPU_MAX_BINDING_BYTES), so the same
windows, batches and partial reductions run on tensors of 96 KiB (CI: TF 2.21; scripts/test-all.sh
runs this file on older TFs with TF_WGPU_OLD_TF_ALL=1). The heavy run
(TF 2.21, or TF_WGPU_HEAVY=1) uses lavapipe's real 128 MiB limit: 192 MiB tensors.
"""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
FAST_LIMIT = 64 * 1024
REAL_LIMIT = 128 * 1024 * 1024
HEAVY = tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"
# The real-size run: the families whose windows differ (elementwise parts, index-map windows,
# partial reductions, batches, table windows, windowed statistics) and the issue's own example.
HEAVY_CASES = ["add_bias", "transpose_batch_leading", "slice", "gather_table", "scatter_add_table",
               "variable_scatter_add", "sum_all", "sum_leading", "argmax_flat", "transpose_wide",
               "transpose_planes_reversed",
               "matmul", "softmax", "conv2d", "conv_backprop_filter", "batch_norm_training", "batch_norm_grad",
               "conv1d_long_signal", "conv3d_shallow_volume"]


def run_worker(elements, cases=(), limit=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if limit:
        env["TF_WGPU_MAX_BINDING_BYTES"] = str(limit)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "big_tensor_worker.py"), str(elements), *cases],
                          capture_output=True, text=True, env=env, timeout=1500)
    records = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            records[record["case"]] = record
    assert records, f"the worker printed nothing (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
    return records


def cases():
    sys.argv, argv = ["big_tensor_worker.py", "0"], sys.argv
    try:
        source = open(os.path.join(HERE, "big_tensor_worker.py")).read()
        start = source.index("CASES = {")
        # The dict's keys, up to its closing brace (not the TOLERANCE dict's after it).
        block = source[start:source.index("\n}\n", start)]
        return [line.split('"')[1] for line in block.splitlines()[1:]
                if line.startswith('    "') and '": ' in line]
    finally:
        sys.argv = argv


CASE_NAMES = cases()


@pytest.fixture(scope="module")
def fast_results():
    return run_worker(int(1.5 * FAST_LIMIT / 4), limit=FAST_LIMIT)


@pytest.mark.parametrize("case", CASE_NAMES)
def test_op_family_on_tensors_past_the_binding_limit(case, fast_results):
    record = fast_results.get(case)
    assert record is not None, f"{case}: the worker died before it (see the other failures)"
    assert record["ok"], record


@pytest.mark.skipif(not HEAVY, reason="heavy suite: TF 2.21 only (TF_WGPU_HEAVY=1 runs it anywhere)")
def test_real_size_tensors_on_lavapipe():
    """192 MiB tensors on lavapipe's real limit, and the issue's `tf.zeros([64, 1024, 1024]) + 1`."""
    results = run_worker(int(1.5 * REAL_LIMIT / 4), HEAVY_CASES)
    failures = [r for r in results.values() if not r["ok"]]
    assert not failures and len(results) == len(HEAVY_CASES), (failures, sorted(results))
    with tf.device("/GPU:0"):
        ones = tf.zeros([64, 1024, 1024]) + 1
        total = tf.reduce_sum(ones)
    assert float(total) == 64 * 1024 * 1024


def test_the_case_list_is_read():
    assert len(CASE_NAMES) > 40 and "keras_train_step" in CASE_NAMES


@pytest.mark.skipif(not HEAVY, reason="heavy suite: TF 2.21 only (TF_WGPU_HEAVY=1 runs it anywhere)")
def test_pool_of_one_image_with_a_window_past_the_loop_cap():
    """A 269 MB image pooled with windows of 600 x 600 (past llvmpipe's loop cap: pooled rows
    first, then columns) in bands of rows, against TF-CPU."""
    x = tf.random.stateless_normal([1, 8200, 8200, 1], seed=[1, 2])
    for pool in (lambda: tf.nn.max_pool2d(x, 600, 500, "SAME"),
                 lambda: tf.nn.avg_pool2d(x, [600, 300], [400, 500], "VALID")):
        with tf.device("/GPU:0"):
            got = pool().numpy()
        with tf.device("/CPU:0"):
            want = pool().numpy()
        assert abs(got - want).max() <= 1e-6, abs(got - want).max()
