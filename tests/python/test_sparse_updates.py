"""Sparse variable updates: Keras optimizers update an Embedding from its IndexedSlices gradient
through ResourceScatterAdd/ResourceScatterSub. Under `tf.device("/GPU:0")` and with no device
scope, a text classifier trains on WGPU with `compile()`'s defaults and SGD, and its weights after
each epoch equal the same training on TF-CPU; eagerly, `v.scatter_add`/`scatter_sub` equal TF-CPU's.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

GPU = "/GPU:0"

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import keras

    device, scope = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 50, (96, 12))
    labels = (tokens[:, 0] % 2).astype(np.int64)

    def train():
        keras.utils.set_random_seed(3)
        model = keras.Sequential([
            keras.Input((12,), dtype="int32"),
            keras.layers.Embedding(50, 8),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(2),
        ])
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        history = model.fit(tokens, labels, batch_size=32, epochs=3, verbose=0, shuffle=False)
        return model, history.history["loss"]

    if scope == "device":
        with tf.device(device):
            model, losses = train()
    else:
        model, losses = train()
    embedding = model.layers[0].embeddings
    print("RESULT " + json.dumps({
        "losses": losses,
        "embedding": np.asarray(embedding.numpy()).tolist(),
        "device": embedding.value.device,
    }))
""")


def train(device, scope):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if device == "/CPU:0":
        env["CUDA_VISIBLE_DEVICES"] = ""
    run = subprocess.run([sys.executable, "-c", PROGRAM, device, scope], capture_output=True, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    line = next(l for l in run.stdout.splitlines() if l.startswith("RESULT "))
    import json

    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("scope", ["device", "none"])
def test_embedding_with_sgd_trains_on_wgpu_like_cpu(scope):
    got = train(GPU, scope)
    want = train("/CPU:0", "device")
    assert got["device"].endswith("GPU:0"), got["device"]
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(got["embedding"]), np.asarray(want["embedding"]), rtol=1e-4, atol=1e-5)
    assert got["losses"][-1] < got["losses"][0]


@pytest.mark.parametrize("method", ["scatter_add", "scatter_sub"])
def test_eager_scatter_updates_match_cpu(method, strict_placement):
    rng = np.random.default_rng(7)
    table = rng.standard_normal((6, 3)).astype(np.float32)
    updates = rng.standard_normal((4, 3)).astype(np.float32)
    indices = np.array([5, 0, 5, 2], np.int64)

    def run(device):
        with tf.device(device):
            v = tf.Variable(table)
            getattr(v, method)(tf.IndexedSlices(tf.constant(updates), tf.constant(indices)))
            return v.read_value().numpy(), v.device

    (got, where), (want, _) = run(GPU), run("/CPU:0")
    assert where.endswith("GPU:0")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
