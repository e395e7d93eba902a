"""Keras `model.fit` on the WGPU device, on scikit-learn's bundled digits (no download): per-step
losses and final accuracy against the same fit on TF-CPU from the same seed, and TF's placement
log showing the training step's compute on the device.

Keras's default `jit_compile="auto"` turns XLA on for any GPU but Apple's, and XLA has no compiler
for the WGPU platform, so the models compile with `jit_compile=False` (the README says so).

`run_eagerly=True`: its optimizer and metric updates are eager AssignAdd/AssignSub, which run
through the plugin's kernels where TF exports the variable-access functions of
kernels_experimental.h (2.16), and on TF 2.19 and later as one-op tf.functions that the plugin's
graph rewrite serves (`tensorflow_wgpu._variables`).
"""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

SCRIPT = r"""
import json, sys, time
import numpy as np
import tensorflow as tf
import keras
from keras import layers
from sklearn.datasets import load_digits

name, device, eager = sys.argv[1], sys.argv[2], sys.argv[3] == "eager"
if device == "GPU":
    tf.debugging.set_log_device_placement(True)
# "...64": the model in float64 (Keras's floatx), as scientific code trains.
floatx = "float64" if name.endswith("64") else "float32"
keras.backend.set_floatx(floatx)
digits = load_digits()
x = (digits.data / 16.0).astype(floatx)[:512]
y = digits.target.astype(np.int64)[:512]
keras.utils.set_random_seed(0)
with tf.device("/%s:0" % device):
    if name == "mlp":
        model = keras.Sequential([keras.Input((64,)), layers.Dense(32, activation="relu"), layers.Dropout(0.2),
                                  layers.BatchNormalization(),
                                  layers.Dense(16, activation="tanh"), layers.Dense(10)])
    elif name == "cnn":
        x = x.reshape(-1, 8, 8, 1)
        model = keras.Sequential([keras.Input((8, 8, 1)), layers.Conv2D(8, 3, padding="same", activation="relu"),
                                  layers.BatchNormalization(), layers.MaxPooling2D(),
                                  layers.Conv2D(16, 3, activation="relu"), layers.Flatten(), layers.Dense(10)])
    elif name == "cnn64":
        x = x.reshape(-1, 8, 8, 1)
        model = keras.Sequential([keras.Input((8, 8, 1)), layers.Conv2D(8, 3, padding="same", activation="relu"),
                                  layers.BatchNormalization(), layers.DepthwiseConv2D(3, padding="same"),
                                  layers.MaxPooling2D(), layers.AveragePooling2D(2, padding="same"),
                                  layers.Flatten(), layers.Dense(10)])
    else:  # a Transformer-encoder classifier over the 8 rows of each 8x8 digit
        x = x.reshape(-1, 8, 8)
        inp = keras.Input((8, 8))
        h = layers.Dense(16)(inp)
        a = layers.MultiHeadAttention(num_heads=2, key_dim=8)(h, h)
        h = layers.LayerNormalization()(layers.Add()([h, a]))
        f = layers.Dense(16)(layers.Dense(32, activation="gelu")(h))
        h = layers.LayerNormalization()(layers.Add()([h, f]))
        model = keras.Model(inp, layers.Dense(10)(layers.GlobalAveragePooling1D()(h)))
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=eager,
                  jit_compile=False)
    losses, starts, ends = [], [], []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_begin=lambda batch, logs: starts.append(time.perf_counter()),
        on_train_batch_end=lambda batch, logs: (ends.append(time.perf_counter()), losses.append(float(logs["loss"]))))
    model.fit(x, y, batch_size=64, epochs=2, verbose=0, shuffle=False, callbacks=[record])
    accuracy = float(np.mean(np.argmax(model.predict(x, verbose=0), axis=1) == y))
# Wall time per step (the loss read each step waits for it), past the first steps that trace.
step_ms = 1e3 * float(np.median([e - s for s, e in zip(starts[2:], ends[2:])]))
print("RESULT " + json.dumps({"losses": losses, "accuracy": accuracy, "step_ms": step_ms}), flush=True)
"""

# Placement-log entries that are not compute, and the int32 shape math of Keras's loss reduction
# (an element count), which TF keeps in host memory as with CUDA TF.
NOT_COMPUTE = {"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Const", "NoOp", "Identity", "_EagerConst"}
INT32_SHAPE_MATH = {"Prod", "StridedSlice", "Shape", "Pack"}


def is_input_pipeline(op):
    """tf.data's ops, which run on the CPU by design (eager logs show them; graphs do not)."""
    return "Dataset" in op or "Iterator" in op
# Ops each training step must run on the device.
EXPECTED_ON_DEVICE = {"MatMul", "BiasAddGrad", "SparseSoftmaxCrossEntropyWithLogits", "AssignVariableOp", "Sqrt"}


def fit(name, device, mode="graph"):
    # Eager placement lines ("Executing op ...") are INFO logs.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0" if mode == "eager" else "2")
    out = subprocess.run([sys.executable, "-c", SCRIPT, name, device, mode], env=env, capture_output=True, text=True,
                         timeout=900)
    return out.returncode, out.stdout + out.stderr


def result_of(text):
    match = re.search(r"^RESULT (.*)$", text, re.M)
    assert match, text[-4000:]
    return json.loads(match.group(1))


# The variable route (what differs on TF 2.16, where CI runs this file too) shows in the MLP and the
# CNN; the Transformer's and the float64 model's kernels are the same on every TF: 2.21 runs them,
# TF_WGPU_HEAVY=1 anywhere.
ALL_TFS = ("mlp", "cnn")


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "cnn64"])
def test_fit_matches_cpu_and_trains_on_wgpu(name, mode):
    if name not in ALL_TFS and not (tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"):
        pytest.skip("the same kernels as on TF 2.21 (TF_WGPU_HEAVY=1 runs it here)")
    code, cpu_text = fit(name, "CPU", mode)
    assert code == 0, cpu_text[-4000:]
    code, gpu_text = fit(name, "GPU", mode)
    assert code == 0, gpu_text[-4000:]
    want, got = result_of(cpu_text), result_of(gpu_text)
    # 16 steps (2 epochs of 8 batches). Summation order differs from Eigen's, and Adam carries the
    # difference forward, so the tolerance grows with the step: 1e-4 relative at the start.
    assert len(got["losses"]) == len(want["losses"]) == 16
    for step, (g, w) in enumerate(zip(got["losses"], want["losses"])):
        assert abs(g - w) <= (1e-4 + 2e-4 * step) * abs(w), (step, got["losses"], want["losses"])
    rel = max(abs(g - w) / abs(w) for g, w in zip(got["losses"], want["losses"]))
    # Shown with `pytest -s`: the figures the closing notes quote.
    print(f"\n{name} {mode}: step {got['step_ms']:.1f} ms WGPU, {want['step_ms']:.1f} ms CPU; "
          f"max loss rel diff {rel:.1e}; accuracy {got['accuracy']:.3f} / {want['accuracy']:.3f}")
    if name.endswith("64"):
        # float64 kernels compute in f64: only the summation order differs.
        assert rel <= 1e-10, (got["losses"], want["losses"])
    assert want["losses"][-1] < want["losses"][0], "the reference did not train"
    assert abs(got["accuracy"] - want["accuracy"]) <= 0.02, (got["accuracy"], want["accuracy"])

    if mode == "eager":
        # Eager ops log as "Executing op X in device Y".
        step_nodes = [(op, op, dev) for op, dev in re.findall(r"Executing op (\S+) in device (\S+)", gpu_text)]
    else:
        step_nodes = re.findall(r"^(StatefulPartitionedCall/\S+): \((\S+)\): (\S+)$", gpu_text, re.M)
    assert step_nodes, "no placement log of the training step"
    on_cpu = sorted({op for _, op, dev in step_nodes if dev.endswith("CPU:0") and not is_input_pipeline(op)}
                    - NOT_COMPUTE - INT32_SHAPE_MATH)
    assert not on_cpu, f"training-step ops placed on the CPU: {on_cpu}"
    on_gpu = {op for _, op, dev in step_nodes if dev.endswith("GPU:0")}
    assert EXPECTED_ON_DEVICE <= on_gpu, EXPECTED_ON_DEVICE - on_gpu


TF1_OPTIMIZERS = {
    "sgd": lambda tf: tf.compat.v1.train.GradientDescentOptimizer(0.25),
    "momentum": lambda tf: tf.compat.v1.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda tf: tf.compat.v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda tf: tf.compat.v1.train.AdamOptimizer(0.1),
    "rmsprop": lambda tf: tf.compat.v1.train.RMSPropOptimizer(0.01, momentum=0.5),
    "adagrad": lambda tf: tf.compat.v1.train.AdagradOptimizer(0.1),
}


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("optimizer", TF1_OPTIMIZERS)
def test_tf1_style_optimizer_trains(strict_placement, optimizer, mode):
    """tf.compat.v1's optimizers (ResourceApplyGradientDescent/Momentum/Adam/RMSProp/Adagrad) give
    TF-CPU's variable values: inside tf.function (rewritten by the plugin's graph pass) on every
    TF version; eagerly through the kernels where TF exports variable access (they lock the
    variables), elsewhere through one-op tf.functions (tensorflow_wgpu._variables)."""
    import tensorflow as tf

    def train(device):
        with tf.device(device):
            v = tf.Variable([1.0, -2.0, 3.0])
            opt = TF1_OPTIMIZERS[optimizer](tf)

            def step():
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(v * v * v)
                opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
                return v.read_value()

            run = tf.function(step) if mode == "graph" else step
            values = [run() for _ in range(4)]
        return values[-1]

    got, want = train("/GPU:0"), train("/CPU:0")
    assert got.device.endswith("GPU:0")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    assert not np.allclose(want.numpy(), [1.0, -2.0, 3.0]), "the reference did not move"


def test_fused_batch_norm_training_and_its_gradient_match_cpu(strict_placement):
    """tf.compat.v1's fused batch norm (FusedBatchNormV3 with is_training, FusedBatchNormGradV3
    fed by our own saved statistics) through GradientTape, against TF-CPU."""
    import tensorflow as tf

    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 7, 9, 6)).astype(np.float32) * 2 + 1
    scale, offset = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    weights = rng.standard_normal(x.shape).astype(np.float32)

    def run(device):
        with tf.device(device):
            tx, ts, to = tf.constant(x), tf.constant(scale), tf.constant(offset)
            with tf.GradientTape() as tape:
                tape.watch([tx, ts, to])
                y, mean, var = tf.compat.v1.nn.fused_batch_norm(tx, ts, to, epsilon=1e-3, is_training=True)
                loss = tf.reduce_sum(y * weights)
            return [y, mean, var] + tape.gradient(loss, [tx, ts, to])

    got, want = run("/GPU:0"), run("/CPU:0")
    for name, g, w in zip(["y", "mean", "variance", "dx", "dscale", "doffset"], got, want):
        assert g.device.endswith("GPU:0"), name
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


def test_gather_gradient_is_summed_on_the_device():
    """The gradient of a gather is IndexedSlices; making it dense runs UnsortedSegmentSum, whose
    result must come from the device. (Soft placement stays on: the int32 shape math around it has
    no device kernel, as with CUDA TF's host-memory int32.)"""
    import tensorflow as tf

    rng = np.random.default_rng(6)
    params = rng.standard_normal((50, 8)).astype(np.float32)
    ids = rng.integers(0, 50, size=(30, 4)).astype(np.int32)  # with repeats

    def run(device):
        with tf.device(device):
            p = tf.constant(params)
            with tf.GradientTape() as tape:
                tape.watch(p)
                loss = tf.reduce_sum(tf.square(tf.gather(p, ids)))
            return tf.convert_to_tensor(tape.gradient(loss, p))

    got, want = run("/GPU:0"), run("/CPU:0")
    assert got.device.endswith("GPU:0")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
