"""Composite Keras models (inference, inside tf.function) on the WGPU device: outputs equal TF-CPU's
within tolerance, and TF's placement log shows every compute op of the WGPU run on the device."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
import keras
from keras import layers

def build(name):
    keras.utils.set_random_seed(7)
    if name == "mlp":
        return keras.Sequential([keras.Input((20,)), layers.Dense(32, activation="relu"), layers.Dropout(0.3),
                                 layers.BatchNormalization(), layers.Dense(16, activation="tanh"),
                                 layers.Dense(10, activation="softmax")]), (8, 20)
    if name == "cnn":
        return keras.Sequential([keras.Input((16, 16, 3)), layers.Conv2D(8, 3, padding="same", activation="relu"),
                                 layers.BatchNormalization(), layers.MaxPooling2D(), layers.DepthwiseConv2D(3, padding="same"),
                                 layers.Conv2D(12, 3, strides=2, activation="relu"), layers.AveragePooling2D(2),
                                 layers.Flatten(), layers.Dense(5)]), (4, 16, 16, 3)
    inp = keras.Input((10, 16))
    x = layers.MultiHeadAttention(num_heads=2, key_dim=8)(inp, inp)
    x = layers.LayerNormalization()(layers.Add()([inp, x]))
    f = layers.Dense(32, activation="gelu")(x)
    f = layers.Dense(16)(f)
    x = layers.LayerNormalization()(layers.Add()([x, f]))
    out = layers.Dense(3, activation="softmax")(layers.GlobalAveragePooling1D()(x))
    return keras.Model(inp, out), (4, 10, 16)

name, device, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
if device == "GPU":
    # Placement is logged when a function is first placed, and only if asked before TF starts.
    tf.debugging.set_log_device_placement(True)
model, shape = build(name)
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
forward = tf.function(lambda t: model(t, training=False))
with tf.device("/%s:0" % device):
    result = forward(tf.constant(x))
np.save(out_path, result.numpy())
# The dtype of every node of the forward graph, so the test can tell int32 shape math (kept in host
# memory, as with CUDA TF) from compute.
graph = forward.get_concrete_function(tf.TensorSpec(x.shape, tf.float32)).graph
types = {}
for op in graph.get_operations():
    try:
        types[op.name] = op.get_attr("T").name
    except (ValueError, TypeError):
        types[op.name] = op.outputs[0].dtype.name if op.outputs else ""
print("NODE-TYPES " + json.dumps(types), flush=True)
print("RESULT-DEVICE " + result.device, flush=True)
"""

# Placement-log entries that are not compute: function arguments, results, constants, control.
NOT_COMPUTE = {"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Const", "NoOp", "Identity", "_EagerConst"}


def run_model(name, device, tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    path = str(tmp_path / f"{name}-{device}.npy")
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, device, path], env=env, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    return np.load(path), text


@pytest.mark.parametrize("name,tolerance", [("mlp", 1e-5), ("cnn", 1e-4), ("transformer", 1e-5)])
def test_model_inference_matches_cpu_and_runs_on_wgpu(name, tolerance, tmp_path):
    want, _ = run_model(name, "CPU", tmp_path)
    got, text = run_model(name, "GPU", tmp_path)
    assert re.search(r"^RESULT-DEVICE .*GPU:0$", text, re.M), text[-2000:]
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    types = json.loads(re.search(r"^NODE-TYPES (.*)$", text, re.M).group(1))
    # Only the forward function's nodes (model construction runs eagerly before it).
    placements = [p for p in re.findall(r"^(\S+): \((\S+)\): (\S+)$", text, re.M) if p[0] in types]
    assert placements, "no placement log captured"
    on_cpu = sorted(
        {f"{op} ({types[node]})" for node, op, device in placements
         if device.endswith("CPU:0") and op not in NOT_COMPUTE and types[node] != "int32"}
    )
    assert not on_cpu, f"compute ops of the WGPU run placed on the CPU: {on_cpu}"
    on_gpu = {op for _, op, device in placements if device.endswith("GPU:0")}
    assert on_gpu - NOT_COMPUTE, "no compute op ran on the WGPU device"
