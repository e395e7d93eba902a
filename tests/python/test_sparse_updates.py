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
from conftest import registered_kernels, worker_result

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
    return worker_result(run)


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


# The variable methods behind ResourceScatter* and ResourceScatterNd*, with duplicate indices where
# the combine is order-free (up to rounding) and unique ones for updates (with duplicates, which
# update lands is unspecified on TF-GPU).
ROW_METHODS = ["scatter_add", "scatter_sub", "scatter_mul", "scatter_div", "scatter_min", "scatter_max",
               "scatter_update"]
ND_METHODS = ["scatter_nd_add", "scatter_nd_sub", "scatter_nd_update", "scatter_nd_min", "scatter_nd_max"]


def variable_update(device, method, graph, table, indices, updates):
    with tf.device(device):
        v = tf.Variable(table)

        def update():
            if method in ND_METHODS:
                getattr(v, method)(tf.constant(indices), tf.constant(updates))
            else:
                getattr(v, method)(tf.IndexedSlices(tf.constant(updates), tf.constant(indices)))

        tf.function(update, autograph=False)() if graph else update()
        return v.read_value().numpy(), v.device


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("method", ROW_METHODS + ND_METHODS)
def test_variable_scatters_match_cpu(method, index_dtype, graph, strict_placement):
    rng = np.random.default_rng(11)
    table = (rng.standard_normal((6, 3)) + 2.0).astype(np.float32)
    if method in ND_METHODS:
        unique = method == "scatter_nd_update"
        indices = np.array([[4, 1], [1, 2], [0, 0]] if unique else [[4, 1], [1, 2], [4, 1]], index_dtype)
        updates = (rng.standard_normal(3) + 1.5).astype(np.float32)
    else:
        indices = np.array([5, 0, 2, 3] if method == "scatter_update" else [5, 0, 5, 2], index_dtype)
        updates = (rng.standard_normal((4, 3)) + 1.5).astype(np.float32)
    (got, where), (want, _) = [variable_update(d, method, graph, table, indices, updates) for d in (GPU, "/CPU:0")]
    assert where.endswith("GPU:0")
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Min", "Max", "Update"])
def test_scalar_updates_serve_every_named_row(op, graph, strict_placement):
    """A scalar `updates` stands for every row the indices name (`updates.shape = []`)."""
    table = np.arange(18, dtype=np.float32).reshape(6, 3) - 4.0

    def run(device):
        with tf.device(device):
            v = tf.Variable(table)

            def update():
                getattr(tf.raw_ops, f"ResourceScatter{op}")(resource=v.handle, indices=tf.constant([4, 1]),
                                                             updates=tf.constant(2.5))

            tf.function(update, autograph=False)() if graph else update()
            return v.read_value().numpy()

    np.testing.assert_allclose(run(GPU), run("/CPU:0"), rtol=1e-6)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64])
def test_updates_and_gathers_of_every_word_dtype(dtype, graph, strict_placement):
    """ResourceScatterUpdate, ResourceScatterNdUpdate and ResourceGatherNd move the variable's
    words, whatever its dtype."""
    table = (np.arange(24).reshape(6, 4) * 3 - 7).astype(dtype)
    rows = (np.arange(8).reshape(2, 4) + 100).astype(dtype)
    values = np.array([-1, -2, -3], dtype)
    nd = np.array([[0, 1], [5, 3], [2, 2]], np.int64)

    def run(device):
        with tf.device(device):
            v = tf.Variable(table)

            def update():
                v.scatter_update(tf.IndexedSlices(tf.constant(rows), tf.constant([3, 1])))
                v.scatter_nd_update(tf.constant(nd), tf.constant(values))
                return tf.gather_nd(v, tf.constant([[5], [0], [1]])), tf.gather_nd(v, tf.constant(nd))

            out = tf.function(update, autograph=False)() if graph else update()
            return [np.asarray(o) for o in out] + [v.read_value().numpy()], v.device

    (got, where), (want, _) = run(GPU), run("/CPU:0")
    assert where.endswith("GPU:0")
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_repeated_indices_assign_one_row_whole(dtype, graph, strict_placement):
    """Where scatter updates repeat an index, one of their rows wins whole (TF-GPU: any one row),
    never a mix of two rows' words in one element: 8-byte elements go through the scatter chains."""
    repeats = 3000
    # Each row's elements differ from every other row's in both 32-bit words.
    rows = ((np.arange(repeats)[:, None] + 1) * (2**32 + 1) + np.arange(3)[None, :]).astype(dtype)
    with tf.device(GPU):
        v = tf.Variable(np.zeros((4, 3), dtype))

        def run():
            v.scatter_update(tf.IndexedSlices(tf.constant(rows), tf.constant(np.full(repeats, 2, np.int64))))
            v.scatter_nd_update(tf.constant(np.full((repeats, 1), 1, np.int64)), tf.constant(rows))
            return v.read_value()

        got = (tf.function(run, autograph=False)() if graph else run()).numpy()
    assert v.device.endswith("GPU:0")
    for row in (1, 2):
        assert any(np.array_equal(got[row], r) for r in rows), (row, got[row])
    np.testing.assert_array_equal(got[[0, 3]], np.zeros((2, 3), dtype))


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
def test_out_of_range_indices_follow_tf_gpu(graph, strict_placement):
    """TF-GPU drops scatter updates whose indices are out of range and gathers zeros for them
    (TF-CPU raises instead)."""
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.device(GPU):
        v = tf.Variable(table)

        def run():
            v.scatter_update(tf.IndexedSlices(tf.constant([[9.0, 9.0, 9.0], [7.0, 7.0, 7.0]]), tf.constant([1, 4])))
            v.scatter_nd_add(tf.constant([[0, 0], [-1, 2], [2, 3]]), tf.constant([10.0, 20.0, 30.0]))
            return tf.gather_nd(v, tf.constant([[3, 2], [4, 0], [0, -1]]))

        gathered = tf.function(run, autograph=False)() if graph else run()
    want = table.copy()
    want[1] = 9.0
    want[0, 0] += 10.0
    np.testing.assert_array_equal(v.numpy(), want)
    np.testing.assert_array_equal(gathered.numpy(), [want[3, 2], 0.0, 0.0])


# TF1 optimizers on a model with an embedding (sparse gradients: ResourceSparseApply*) and a dense
# layer (ResourceApply*).
TF1_OPTIMIZERS = {
    "momentum": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adagrad": lambda: tf.compat.v1.train.AdagradOptimizer(0.1),
    "rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.05, momentum=0.5),
    "centered-rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.05, momentum=0.5, centered=True),
    "adadelta": lambda: tf.compat.v1.train.AdadeltaOptimizer(1.0),
    "proximal-adagrad": lambda: tf.compat.v1.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.01,
                                                                            l2_regularization_strength=0.02),
    "proximal-gd": lambda: tf.compat.v1.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
    "adagrad-da": lambda: tf.compat.v1.train.AdagradDAOptimizer(
        0.1, tf.Variable(3, dtype=tf.int64), l1_regularization_strength=0.01, l2_regularization_strength=0.02),
    "ftrl": lambda: tf.compat.v1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                                     l2_regularization_strength=0.02),
    "ftrl-power": lambda: tf.compat.v1.train.FtrlOptimizer(0.1, learning_rate_power=-0.7),
    "ftrl-v2": lambda: tf.compat.v1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01,
                                                        l2_shrinkage_regularization_strength=0.05),
}


def train_tf1(device, name, graph, steps=3, dtype=np.float32):
    rng = np.random.default_rng(5)
    table = rng.standard_normal((10, 4)).astype(dtype)
    weights = rng.standard_normal((4, 2)).astype(dtype)
    batches = [(rng.integers(0, 10, 6), rng.standard_normal((6, 2)).astype(dtype)) for _ in range(steps)]
    with tf.device(device):
        embedding, dense = tf.Variable(table), tf.Variable(weights)
        optimizer = TF1_OPTIMIZERS[name]()

        def step(ids, target):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(tf.gather(embedding, ids), dense) - target))
            grads = tape.gradient(loss, [embedding, dense])
            optimizer.apply_gradients(zip(grads, [embedding, dense]))
            return loss

        run = tf.function(step, autograph=False) if graph else step
        losses = [float(run(tf.constant(ids), tf.constant(target))) for ids, target in batches]
        return embedding.numpy(), dense.numpy(), losses, embedding.device


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(TF1_OPTIMIZERS))
def test_tf1_optimizers_with_sparse_gradients_match_cpu(name, graph):
    # Soft placement stays on, as by default: the optimizers sum duplicate indices first with ops
    # TF runs only on the CPU (Unique, int32 shape math). The updates themselves take the
    # variables' device (a resource op cannot run elsewhere), so a missing kernel fails the test.
    got, want = train_tf1(GPU, name, graph), train_tf1("/CPU:0", name, graph)
    assert got[3].endswith("GPU:0")
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.skipif(("ResourceSparseApplyAdagrad", {"T": "float64", "Tindices": "int64"}) not in registered_kernels(),
                    reason="no float64 kernels on this adapter")
# (TF's proximal optimizers pass float32 hyperparameters whatever the variable's dtype: their
# float64 ops fail to build on TF-CPU too.)
@pytest.mark.parametrize("name", sorted(set(TF1_OPTIMIZERS) - {"proximal-adagrad", "proximal-gd"}))
def test_tf1_optimizers_in_float64_match_cpu(name):
    """The same training in float64: the sparse and dense updates compute in f64."""
    got = train_tf1(GPU, name, True, dtype=np.float64)
    want = train_tf1("/CPU:0", name, True, dtype=np.float64)
    assert got[3].endswith("GPU:0")
    for g, w in zip(got[:3], want[:3]):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
