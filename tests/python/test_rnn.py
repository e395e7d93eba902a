"""Keras's recurrent layers on WGPU, as a user writes them: `LSTM` and `GRU` with their default
arguments call `CudnnRNNV3` (and its backprop) on any visible GPU. Each model runs in a fresh process
three ways: under `tf.device("/GPU:0")`, with no device scope, and on TF-CPU with the GPU hidden
(`set_visible_devices([], "GPU")`), which makes Keras take its generic, op-by-op path: the
reference. Predictions, one step's gradients and three epochs of `fit` (`compile()` defaults, SGD)
must agree, and the GPU runs' graphs must hold the cuDNN ops (no silent generic path).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
from conftest import worker_result

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import keras

    model_name, mode = sys.argv[1], sys.argv[2]
    if mode == "cpu":
        tf.config.set_visible_devices([], "GPU")
    rng = np.random.default_rng(0)
    steps, features, batch = 9, 6, 24

    def build():
        keras.utils.set_random_seed(5)
        if model_name == "lstm":
            inputs = keras.Input((steps, features))
            x = keras.layers.LSTM(12)(inputs)
        elif model_name == "gru_stack":
            inputs = keras.Input((steps, features))
            x = keras.layers.GRU(10, return_sequences=True)(inputs)
            x = keras.layers.GRU(8)(x)
        elif model_name == "masked_lstm_gru":
            # Right-padded token sequences: the mask becomes CudnnRNNV3's sequence_lengths.
            inputs = keras.Input((steps,), dtype="int32")
            x = keras.layers.Embedding(20, features, mask_zero=True)(inputs)
            x = keras.layers.LSTM(10, return_sequences=True)(x)
            x = keras.layers.GRU(7)(x)
        elif model_name == "bidirectional":
            inputs = keras.Input((steps,), dtype="int32")
            x = keras.layers.Embedding(20, features, mask_zero=True)(inputs)
            x = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(x)
            x = keras.layers.Bidirectional(keras.layers.GRU(5))(x)
        elif model_name == "states":
            inputs = keras.Input((steps, features))
            seq, h, c = keras.layers.LSTM(9, return_sequences=True, return_state=True)(inputs)
            x = keras.layers.GRU(9, go_backwards=True)(seq, initial_state=h)
            x = keras.layers.Concatenate()([x, c])
        outputs = keras.layers.Dense(3)(x)
        return keras.Model(inputs, outputs)

    if model_name in ("masked_lstm_gru", "bidirectional"):
        lengths = rng.integers(2, steps + 1, batch)
        lengths[0] = steps
        data = rng.integers(1, 20, (batch, steps)) * (np.arange(steps)[None, :] < lengths[:, None])
        data = data.astype(np.int32)
    else:
        data = rng.standard_normal((batch, steps, features)).astype(np.float32)
    labels = rng.integers(0, 3, batch)

    def run():
        model = build()
        predictions = model.predict(data, verbose=0)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        # In a graph: eagerly, Keras would quietly fall back to its generic path if the cuDNN op
        # raised, and the comparison would pass without it.
        @tf.function
        def gradients(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            return tape.gradient(loss, model.trainable_variables)

        grads = gradients(tf.constant(data), tf.constant(labels))
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss=loss_fn)
        history = model.fit(data, labels, batch_size=8, epochs=3, verbose=0, shuffle=False)
        probe = tf.function(lambda x: model(x, training=True))
        with tf.GradientTape() as tape:
            ops = probe.get_concrete_function(tf.constant(data)).graph.get_operations()
        return {
            "predictions": predictions.tolist(),
            "grads": [np.asarray(tf.convert_to_tensor(g)).ravel().tolist() for g in grads],
            "names": [v.path for v in model.trainable_variables],
            "losses": history.history["loss"],
            "ops": sorted({op.type for op in ops}),
            "device": model.trainable_variables[0].value.device,
        }

    if mode == "gpu":
        with tf.device("/GPU:0"):
            result = run()
    else:
        result = run()
    print("RESULT " + json.dumps(result))
""")

MODELS = ["lstm", "gru_stack", "masked_lstm_gru", "bidirectional", "states"]
# Each model is three processes (about a minute); TF 2.21 runs them all, older TFs two of them
# (TF_WGPU_HEAVY=1 runs all anywhere).
if not (tf.__version__.startswith("2.21.") or os.environ.get("TF_WGPU_HEAVY") == "1"):
    MODELS = ["lstm", "bidirectional"]


def run(model, mode, extra_env=None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(extra_env or {}))
    done = subprocess.run([sys.executable, "-c", PROGRAM, model, mode], capture_output=True, text=True, env=env,
                          timeout=600)
    return worker_result(done, f"{model} {mode}")


@pytest.fixture(scope="module")
def references():
    return {}


def reference(references, model):
    if model not in references:
        references[model] = run(model, "cpu")
    return references[model]


@pytest.mark.parametrize("mode", ["gpu", "unscoped"])
@pytest.mark.parametrize("model", MODELS)
def test_keras_recurrent_model_matches_tf_cpu(references, model, mode):
    ref = reference(references, model)
    got = run(model, mode)
    assert "CudnnRNNV3" in got["ops"], f"Keras took its generic path on WGPU: {got['ops']}"
    assert "CudnnRNNV3" not in ref["ops"], "the reference must be Keras's generic path"
    assert got["device"].endswith("GPU:0")
    np.testing.assert_allclose(got["predictions"], ref["predictions"], rtol=1e-5, atol=2e-6)
    assert got["names"] == ref["names"]
    for name, g, r in zip(got["names"], got["grads"], ref["grads"]):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=2e-6, err_msg=name)
    np.testing.assert_allclose(got["losses"], ref["losses"], rtol=1e-5)


def test_gru_gate_order_matters(references):
    """The GRU's weights in the order Keras sends on this build: forcing the other order must
    change the result (so the comparison above can fail), and the detected one must match."""
    ref = reference(references, "gru_stack")
    is_cuda = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, tensorflow as tf; print(json.dumps(tf.sysconfig.get_build_info()"
         "['is_cuda_build']))"], capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    ).stdout.strip().splitlines()[-1])
    wrong = "zrn" if is_cuda else "rzn"
    got = run("gru_stack", "gpu", {"TF_WGPU_GRU_GATE_ORDER": wrong})
    assert not np.allclose(got["predictions"], ref["predictions"], rtol=1e-3, atol=1e-4)


# The start of a Keras program run on the GPU or, with `cpu` as its argument, on TF-CPU.
PRECISION_PROGRAM_HEAD = textwrap.dedent("""
        import json, sys
        import numpy as np
        import tensorflow as tf
        import keras
        if sys.argv[1] == "cpu":
            tf.config.set_visible_devices([], "GPU")
""")


def run_on_gpu_and_cpu(program):
    """`program`'s RESULT with the GPU visible and on TF-CPU, each in a fresh process."""
    results = {}
    for mode in ("gpu", "cpu"):
        done = subprocess.run([sys.executable, "-c", program, mode], capture_output=True, text=True,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
        results[mode] = worker_result(done, mode)
    return results


def test_mixed_precision_lstm():
    """`mixed_float16`: CudnnRNNV3 with T=float16 (computed in float32, rounded once)."""
    program = PRECISION_PROGRAM_HEAD + textwrap.dedent("""
        keras.mixed_precision.set_global_policy("mixed_float16")
        keras.utils.set_random_seed(2)
        model = keras.Sequential([keras.Input((7, 5)), keras.layers.LSTM(8, return_sequences=True),
                                  keras.layers.GRU(6), keras.layers.Dense(2, dtype="float32")])
        x = np.random.default_rng(1).standard_normal((6, 7, 5)).astype(np.float32)
        graph = tf.function(lambda x: model(x)).get_concrete_function(tf.constant(x)).graph
        halves = sorted(op.type for op in graph.get_operations()
                        if op.type == "CudnnRNNV3" and op.get_attr("T") == tf.float16)
        print("RESULT " + json.dumps({"predictions": model.predict(x, verbose=0).tolist(), "ops": halves}))
    """)
    results = run_on_gpu_and_cpu(program)
    assert results["gpu"]["ops"] == ["CudnnRNNV3", "CudnnRNNV3"], results["gpu"]["ops"]
    assert results["cpu"]["ops"] == [], "the reference must be Keras's generic path"
    np.testing.assert_allclose(results["gpu"]["predictions"], results["cpu"]["predictions"], atol=1e-2)


def test_float64_lstm_and_gru():
    """`set_floatx("float64")`: CudnnRNNV3 with T=float64, computed in f64 where the adapter has
    SHADER_F64 (TF-CPU has no kernel for the op: without ours the model fails to run). Predictions
    and a few SGD steps' losses against Keras's generic path on TF-CPU, to float64 rounding."""
    from conftest import registered_kernels
    if not any(op == "CudnnRNNV3" and attrs.get("T") == "float64" for op, attrs in registered_kernels()):
        pytest.skip("float64 needs SHADER_F64 (Vulkan)")
    program = PRECISION_PROGRAM_HEAD + textwrap.dedent("""
        keras.backend.set_floatx("float64")
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((7, 5)), keras.layers.LSTM(8, return_sequences=True),
                                  keras.layers.GRU(6), keras.layers.Dense(2)])
        rng = np.random.default_rng(1)
        x, y = rng.standard_normal((12, 7, 5)), rng.standard_normal((12, 2))
        graph = tf.function(lambda x: model(x)).get_concrete_function(tf.constant(x)).graph
        doubles = sorted(op.type for op in graph.get_operations()
                         if op.type == "CudnnRNNV3" and op.get_attr("T") == tf.float64)
        predictions = model.predict(x, verbose=0)
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        losses = model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False).history["loss"]
        print("RESULT " + json.dumps({"predictions": predictions.tolist(), "dtype": str(predictions.dtype),
                                      "losses": losses, "ops": doubles}))
    """)
    results = run_on_gpu_and_cpu(program)
    assert results["gpu"]["ops"] == ["CudnnRNNV3", "CudnnRNNV3"], results["gpu"]["ops"]
    assert results["cpu"]["ops"] == [], "the reference must be Keras's generic path"
    assert results["gpu"]["dtype"] == "float64"
    np.testing.assert_allclose(results["gpu"]["predictions"], results["cpu"]["predictions"], rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(results["gpu"]["losses"], results["cpu"]["losses"], rtol=1e-11)
