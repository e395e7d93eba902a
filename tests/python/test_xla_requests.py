"""XLA requests on WGPU: `tf.function(jit_compile=True)`, Keras's `compile()` defaults
(`jit_compile="auto"` means XLA on every non-Apple GPU) and Keras's grouped convolutions (wrapped in
a `tf.function(jit_compile=True)`) run through TF's executor on the WGPU device instead of failing
with "Could not find compiler for platform WGPU" (`tensorflow_wgpu._xla`)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

GPU = "/GPU:0"


def run_python(code, **env):
    """Runs `code` in a fresh interpreter that never imports tensorflow_wgpu itself (the .pth file in
    site-packages must do it)."""
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=full_env)


def test_jit_compile_function_runs_on_wgpu_and_matches_cpu(strict_placement, rng):
    @tf.function(jit_compile=True)
    def step(x, w):
        return tf.nn.relu(tf.matmul(x, w)) * 2.0 + 1.0

    x = rng.standard_normal((5, 7)).astype(np.float32)
    w = rng.standard_normal((7, 3)).astype(np.float32)
    with tf.device(GPU):
        got = step(tf.constant(x), tf.constant(w))
    assert got.device.endswith("GPU:0")
    want = np.maximum(x @ w, 0) * 2 + 1
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


PROGRAM = """
    import warnings
    import numpy as np
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def f(x):
        return x * 2.0 + 1.0

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            a = f(tf.ones([3]))
            b = f(tf.ones([4]))
            print("RESULT", a.numpy().tolist(), b.device)
        except Exception as e:
            print("ERROR", type(e).__name__, str(e).splitlines()[0])
    print("WARNINGS", sum("tensorflow-wgpu: XLA" in str(w.message) for w in caught))
"""


def test_a_plain_program_gets_the_function_run_and_one_warning():
    run = run_python(PROGRAM)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "RESULT [3.0, 3.0, 3.0]" in run.stdout and "GPU:0" in run.stdout, run.stdout + run.stderr[-2000:]
    assert "WARNINGS 1" in run.stdout, run.stdout


def test_opting_out_restores_tfs_error():
    run = run_python(PROGRAM, TF_WGPU_IGNORE_XLA="0")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ERROR UnimplementedError Could not find compiler for platform WGPU" in run.stdout, run.stdout
    assert "WARNINGS 0" in run.stdout, run.stdout


KERAS = """
    import numpy as np
    import tensorflow as tf
    import keras

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8, 8, 4)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    def build():
        keras.utils.set_random_seed(1)
        return keras.Sequential([
            keras.Input((8, 8, 4)),
            keras.layers.Conv2D(8, 3, groups=2, activation="relu"),
            keras.layers.Conv2D(8, 3, padding="same"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(3),
        ])
    model = build()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert model.jit_compile, "Keras did not ask for XLA: the test would not test the hook"
    SCOPE
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    print("LOSS", history.history["loss"])
    with tf.device("/CPU:0"):
        reference = build()
        reference.set_weights(model.get_weights())
        want = reference(x[:8]).numpy()
    got = model.predict(x[:8], verbose=0)
    print("MAXDIFF", float(np.abs(got - want).max()))
    print("VARIABLES_ON", sorted({v.value.device.split(":")[-2][-3:] for v in model.variables}))
"""


@pytest.mark.parametrize("scope", ["none", "gpu"])
def test_keras_compile_defaults_train_on_wgpu(scope):
    body = KERAS.replace("    SCOPE", "" if scope == "none" else "    tf.device('/GPU:0').__enter__()")
    run = run_python(body)
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    losses = eval(run.stdout.split("LOSS", 1)[1].splitlines()[0])
    assert losses[-1] < losses[0], losses
    maxdiff = float(run.stdout.split("MAXDIFF", 1)[1].split()[0])
    assert maxdiff < 1e-4, run.stdout
    assert "VARIABLES_ON ['GPU']" in run.stdout, run.stdout


def test_grouped_convolution_matches_cpu(rng):
    import keras

    layer = keras.layers.Conv2D(6, 3, groups=3, padding="same")
    x = rng.standard_normal((2, 9, 9, 6)).astype(np.float32)
    layer.build(x.shape)
    with tf.device(GPU):
        got = layer(tf.constant(x)).numpy()
    with tf.device("/CPU:0"):
        kernel, bias = (w.numpy() for w in layer.weights)
        groups = [tf.nn.conv2d(x[..., 2 * g:2 * g + 2], kernel[..., 2 * g:2 * g + 2], 1, "SAME") for g in range(3)]
        want = tf.concat(groups, axis=-1).numpy() + bias
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
