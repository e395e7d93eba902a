"""Runs a small computation on the WGPU device and prints where each op ran.

    python examples/python/run_on_wgpu.py

TensorFlow loads the plugin from site-packages/tensorflow-plugins (after `pip install .`), or from
TF_PLUGGABLE_DEVICE_LIBRARY_PATH.
"""

import numpy as np
import tensorflow as tf

gpus = tf.config.list_physical_devices("GPU")
print("GPU devices:", gpus)
if not gpus:
    raise SystemExit("no WGPU device: is the plugin installed and a Vulkan/Metal/DX12 driver present?")
print("device details:", tf.config.experimental.get_device_details(gpus[0]))

tf.debugging.set_log_device_placement(True)
tf.config.set_soft_device_placement(False)

rng = np.random.default_rng(0)
x_host = rng.standard_normal((4, 5)).astype(np.float32)
b_host = rng.standard_normal((5,)).astype(np.float32)

with tf.device("/GPU:0"):
    x = tf.constant(x_host)
    b = tf.constant(b_host)
    y = x * b + x          # Mul and AddV2 with broadcasting
    top = y[1:3]           # StridedSlice
    left, right = tf.split(y, [2, 3], axis=1)  # SplitV
    counts = tf.cast(y * 10.0, tf.int32)       # Cast

for name, t in [("y", y), ("top", top), ("left", left), ("right", right), ("counts", counts)]:
    print(f"{name:>6} on {t.device}: shape {t.shape}")

expected = x_host * b_host + x_host
assert np.allclose(y.numpy(), expected, rtol=1e-6, atol=1e-6)
assert np.array_equal(top.numpy(), y.numpy()[1:3])
assert np.array_equal(counts.numpy(), (expected * 10.0).astype(np.int32))
print("OK: results match NumPy; computed on", y.device)
