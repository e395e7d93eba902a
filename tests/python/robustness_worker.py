"""The workloads of test_robustness.py, each run in a fresh process so that a crash, a hang or a
leak of one does not reach pytest's process, and so that memory figures are this workload's own.

    python robustness_worker.py load SECONDS THREADS TAG   # mixed eager ops and tf.functions
    python robustness_worker.py soak STEPS                 # Keras fit, memory after every epoch
    python robustness_worker.py oom                        # run with TF_WGPU_MEMORY_LIMIT_MB set

Each prints one line `RESULT {json}` for the test to check, and lines for the figures it prints.
A load worker exits 1 when any of its checks failed. Every workload arms faulthandler: a worker
that hangs prints every thread's Python stack and exits, instead of waiting for pytest's timeout.
"""

import contextlib
import faulthandler
import gc
import json
import math
import os
import sys
import threading
import time
import traceback
import zlib

import numpy as np
import tensorflow as tf

# TF_WGPU_ROBUSTNESS_DEVICE=/CPU:0 runs a workload on TF-CPU instead, as a control.
DEVICE = os.environ.get("TF_WGPU_ROBUSTNESS_DEVICE", "/GPU:0")


def seed_for(*key):
    """As conftest.seed_for: a seed from `key` and TF_WGPU_TEST_SEED (default 0)."""
    return zlib.crc32(repr(key).encode()) ^ int(os.environ.get("TF_WGPU_TEST_SEED", "0"))


def memory_stats():
    """The device's figures: the plugin's budget and buffers, with TF's own count of tensor bytes
    (get_memory_info) as bytes in use and peak where TF's BFC allocator carves tensors out of the
    plugin's buffers (the default)."""
    import tensorflow_wgpu

    stats = tensorflow_wgpu.memory_stats(0)
    if os.environ.get("TF_WGPU_ALLOCATOR", "bfc") != "pool":
        info = tf.config.experimental.get_memory_info("GPU:0")
        stats = dict(stats, bytes_in_use=info["current"], peak_bytes_in_use=info["peak"])
    return stats


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def emit(result):
    print("RESULT " + json.dumps(result), flush=True)


# --------------------------------------------------------------------------------------------
# load: mixed eager ops and tf.functions from several threads, each result checked.


def on_device(tensor):
    assert tensor.device.endswith(DEVICE[1:]), f"result placed on {tensor.device}, not {DEVICE}"
    return tensor.numpy()


def close(got, want, rtol, atol, what):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def dims(rng, rank, low=1, high=24):
    return tuple(int(d) for d in rng.integers(low, high + 1, rank))


def op_matmul(rng, ctx):
    m, k, n = dims(rng, 3, 1, 96)
    a, b = randn(rng, m, k), randn(rng, k, n)
    ta, tb = rng.integers(2, size=2).astype(bool)
    with tf.device(DEVICE):
        got = tf.linalg.matmul(tf.constant(a.T.copy() if ta else a), tf.constant(b.T.copy() if tb else b),
                               transpose_a=bool(ta), transpose_b=bool(tb))
    want = a.astype(np.float64) @ b.astype(np.float64)
    close(on_device(got), want, 1e-4, 2e-6 * k, f"matmul {m}x{k}x{n} transposes {ta},{tb}")


def op_chain(rng, ctx):
    shape = dims(rng, int(rng.integers(1, 5)), 1, 16)
    x, y, z = randn(rng, *shape), randn(rng, *shape), randn(rng, *shape[-1:])  # z broadcasts
    with tf.device(DEVICE):
        tx, ty, tz = tf.constant(x), tf.constant(y), tf.constant(z)
        r = (tx + ty) * tz - tx
        r = r * 0.5 + tf.abs(ty)
        r = tf.maximum(r, -1.0) - tf.minimum(tx, ty) * tz
        r = tf.exp(-r * r) + tf.sqrt(tf.abs(tx) + 1.0) / (1.0 + ty * ty)
    w = (x + y) * z - x
    w = w * np.float32(0.5) + np.abs(y)
    w = np.maximum(w, np.float32(-1.0)) - np.minimum(x, y) * z
    w = np.exp(-w * w) + np.sqrt(np.abs(x) + np.float32(1.0)) / (np.float32(1.0) + y * y)
    close(on_device(r), w, 1e-5, 1e-6, f"elementwise chain {shape}")


# TF's eager runtime mixes up host-memory int32 arguments (axes, perms, sizes, shapes) of ops that
# threads run at the same time on a GPU: one thread's Reshape or Sum gets another's shape or axis,
# TF's own kernels included (TF-CPU is unaffected, and inside tf.function the same ops run clean).
# Upstream reports the same on CUDA (tensorflow/tensorflow#61889: "adding a lock for concat can
# avoid such issue"; google/grain#1368). With several threads, the workload issues those eager ops
# under this lock, as that workaround does; everything else runs concurrently.
HOST_ARGUMENTS = threading.Lock()


def host_arguments(ctx):
    return HOST_ARGUMENTS if ctx.get("threads", 1) > 1 else contextlib.nullcontext()


def op_reduce(rng, ctx):
    shape = dims(rng, 3, 1, 40)
    x = randn(rng, *shape)
    axis = [None, 0, 1, 2, -1, (0, 2)][int(rng.integers(6))]
    kind = ["sum", "mean", "max", "min"][int(rng.integers(4))]
    with tf.device(DEVICE), host_arguments(ctx):
        got = getattr(tf, "reduce_" + kind)(tf.constant(x), axis=axis)
    want = getattr(np, kind)(x.astype(np.float64), axis=axis)
    n = x.size // max(1, np.asarray(want).size)
    close(on_device(got), want, 1e-5, 1e-6 * n, f"reduce_{kind} {shape} axis {axis}")


def op_conv2d(rng, ctx):
    n, h, w = int(rng.integers(1, 4)), *dims(rng, 2, 4, 20)
    cin, cout = dims(rng, 2, 1, 8)
    k = int(rng.integers(1, 4))
    stride = int(rng.integers(1, 3))
    padding = ["SAME", "VALID"][int(rng.integers(2))]
    if padding == "VALID":
        h, w = max(h, k), max(w, k)
    x, f = randn(rng, n, h, w, cin), randn(rng, k, k, cin, cout)
    with tf.device(DEVICE):
        got = tf.nn.conv2d(tf.constant(x), tf.constant(f), stride, padding)
    with tf.device("/CPU:0"):
        want = tf.nn.conv2d(tf.constant(x), tf.constant(f), stride, padding).numpy()
    close(on_device(got), want, 1e-4, 1e-5 * k * k * cin, f"conv2d x{x.shape} f{f.shape} s{stride} {padding}")


def op_softmax(rng, ctx):
    rows, cols = dims(rng, 2, 1, 64)
    x = randn(rng, rows, cols) * 4
    log = bool(rng.integers(2))
    with tf.device(DEVICE):
        got = (tf.nn.log_softmax if log else tf.nn.softmax)(tf.constant(x))
    e = x.astype(np.float64) - x.max(axis=-1, keepdims=True)
    want = e - np.log(np.exp(e).sum(-1, keepdims=True)) if log else np.exp(e) / np.exp(e).sum(-1, keepdims=True)
    close(on_device(got), want, 1e-5, 1e-6, f"{'log_' if log else ''}softmax {x.shape}")


def op_shuffle(rng, ctx):
    """concat, transpose and slice: pure data movement, so the result must equal NumPy's exactly."""
    p, q1, q2, r = dims(rng, 4, 1, 12)
    a, b = randn(rng, p, q1, r), randn(rng, p, q2, r)
    perm = [int(i) for i in rng.permutation(3)]
    joined = np.transpose(np.concatenate([a, b], axis=1), perm)
    begin = [int(rng.integers(0, d)) for d in joined.shape]
    size = [int(rng.integers(1, d - s + 1)) for d, s in zip(joined.shape, begin)]
    with tf.device(DEVICE), host_arguments(ctx):
        got = tf.slice(tf.transpose(tf.concat([tf.constant(a), tf.constant(b)], axis=1), perm), begin, size)
    want = joined[tuple(slice(s, s + n) for s, n in zip(begin, size))]
    np.testing.assert_array_equal(on_device(got), want, f"concat/transpose{perm}/slice {begin} {size}")


@tf.function(input_signature=[tf.TensorSpec([None, 16], tf.float32), tf.TensorSpec([16, 32], tf.float32),
                              tf.TensorSpec([32], tf.float32), tf.TensorSpec([32, 10], tf.float32),
                              tf.TensorSpec([10], tf.float32)])
def mlp_forward(x, w1, b1, w2, b2):
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    return tf.nn.softmax(tf.matmul(h, w2) + b2)


def op_mlp_function(rng, ctx):
    batch = int(rng.integers(1, 65))
    args = [randn(rng, batch, 16), randn(rng, 16, 32) / 4, randn(rng, 32), randn(rng, 32, 10) / 4, randn(rng, 10)]
    with tf.device(DEVICE):
        got = mlp_forward(*[tf.constant(a) for a in args])
    x, w1, b1, w2, b2 = [a.astype(np.float64) for a in args]
    logits = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    close(on_device(got), e / e.sum(-1, keepdims=True), 1e-4, 1e-6, f"tf.function MLP forward, batch {batch}")


def tanh_loss_grad(x, w):
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_sum(tf.square(tf.tanh(tf.matmul(x, w))))
    return loss, tape.gradient(loss, w)


tanh_loss_grad_function = tf.function(tanh_loss_grad, input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)


def op_gradient(rng, ctx, function=False):
    n, d, u = dims(rng, 3, 1, 32)
    x, w = randn(rng, n, d), randn(rng, d, u) / 3
    with tf.device(DEVICE), (contextlib.nullcontext() if function else host_arguments(ctx)):
        loss, grad = (tanh_loss_grad_function if function else tanh_loss_grad)(tf.constant(x), tf.constant(w))
    t = np.tanh(x.astype(np.float64) @ w)
    want_grad = x.T.astype(np.float64) @ (2 * t * (1 - t * t))
    what = f"{'tf.function ' if function else ''}GradientTape d/dw sum(tanh(xw)^2), x{x.shape} w{w.shape}"
    close(on_device(loss), np.sum(t * t), 1e-4, 1e-5 * n * u, what + " (loss)")
    close(on_device(grad), want_grad, 1e-4, 1e-5 * n, what)


def op_sgd_step(rng, ctx):
    """A tf.function SGD step on this thread's own variable (AssignSubVariableOp inside a graph)."""
    if "sgd" not in ctx:
        with tf.device(DEVICE):
            w = tf.Variable(tf.zeros([8, 4]))

        @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([None, 4], tf.float32)])
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            w.assign_sub(0.05 * tape.gradient(loss, w))
            return loss

        ctx["sgd"] = (w, step)
    w, step = ctx["sgd"]
    n = int(rng.integers(1, 33))
    x, y = randn(rng, n, 8), randn(rng, n, 4)
    before = w.numpy().astype(np.float64)
    with tf.device(DEVICE):
        loss = step(tf.constant(x), tf.constant(y))
    after = w.numpy()
    residual = x.astype(np.float64) @ before - y
    want = before - 0.05 * (2.0 / residual.size) * (x.T.astype(np.float64) @ residual)
    close(on_device(loss), np.mean(residual ** 2), 1e-4, 1e-6, "tf.function SGD step (loss)")
    close(after, want, 1e-4, 1e-6, f"tf.function SGD step on a variable, batch {n}")


def op_fresh_constants(rng, ctx):
    """A new tf.function with Python-float constants, traced and first called under load: its Const
    kernels upload their tensors on the host-to-device stream without waiting for the compute
    stream, into memory that other threads' ops may have just freed."""
    c1, c2, c3 = (float(v) for v in rng.integers(1, 1000, 3))
    x = rng.integers(1, 100, (1, int(rng.integers(1, 129)))).astype(np.float32)

    @tf.function
    def affine(t):
        return (t * c1 + c2) * c3

    with tf.device(DEVICE):
        got = affine(tf.constant(x))
    close(on_device(got), (x.astype(np.float64) * c1 + c2) * c3, 1e-6, 0, f"fresh tf.function (x*{c1}+{c2})*{c3}")


def op_fresh_sgd_step(rng, ctx):
    """op_sgd_step on a new variable and a new tf.function, traced and first called under load."""
    op_sgd_step(rng, {})


OPS = {
    "matmul": op_matmul,
    "chain": op_chain,
    "reduce": op_reduce,
    "conv2d": op_conv2d,
    "softmax": op_softmax,
    "concat_transpose_slice": op_shuffle,
    "mlp_function": op_mlp_function,
    "gradient_eager": op_gradient,
    "gradient_function": lambda rng, ctx: op_gradient(rng, ctx, function=True),
    "sgd_step_function": op_sgd_step,
    "fresh_function_constants": op_fresh_constants,
    "fresh_sgd_step": op_fresh_sgd_step,
}


def wait_for_peers(spec):
    """`dir:count`: announce this process in `dir` and wait until `count` processes have, so that
    the workloads of several processes overlap whatever their start-up times."""
    folder, count = spec.rsplit(":", 1)
    open(os.path.join(folder, f"ready-{os.getpid()}"), "w").close()
    give_up = time.monotonic() + 180
    while len([n for n in os.listdir(folder) if n.startswith("ready-")]) < int(count):
        if time.monotonic() > give_up:
            raise TimeoutError(f"the other processes did not start within 180 s ({os.listdir(folder)})")
        time.sleep(0.05)


# At most this many failures are recorded in full per thread; a thread stops after MAX_FAILURES.
KEEP_FAILURES, MAX_FAILURES = 3, 100


def load(seconds, threads, tag):
    tf.config.set_soft_device_placement(False)
    tf.get_logger().setLevel("ERROR")  # each thread's SGD step is its own tf.function: no retracing notes
    # A hang prints every thread's stack and ends the process (exit 1) instead of waiting forever.
    faulthandler.dump_traceback_later(seconds + 240, exit=True)
    names = sorted(OPS)
    results = [None] * threads
    start = threading.Barrier(threads)
    deadline = [0.0]
    # Each thread's own SGD tf.function and variable are made and traced before the clock, as the
    # shared functions are below; the fresh_* workloads trace new functions under load.
    contexts = [{"threads": threads} for _ in range(threads)]

    def worker(index):
        seed = seed_for("load", tag, index)
        rng = np.random.default_rng(seed)
        counts, failed = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
        ctx, iteration, failures = contexts[index], 0, []
        start.wait()
        while time.monotonic() < deadline[0] and sum(failed.values()) < MAX_FAILURES:
            kind = names[int(rng.integers(len(names)))]
            try:
                OPS[kind](rng, ctx)
                counts[kind] += 1
            except BaseException as e:  # noqa: BLE001 - every failure is reported, with what ran
                failed[kind] += 1
                if len(failures) < KEEP_FAILURES:
                    failures.append({"iteration": iteration, "kind": kind, "type": type(e).__name__,
                                     "message": str(e).strip()[:1500]})
                if kind == "sgd_step_function":
                    # The variable may hold a wrong value now: reset it, keeping the traced function.
                    ctx["sgd"][0].assign(tf.zeros([8, 4]))
            iteration += 1
        results[index] = {"thread": index, "seed": seed, "iterations": iteration, "counts": counts,
                          "failed": failed, "failures": failures}

    # Trace the shared tf.functions once, before the clock starts (tracing is not what is tested).
    with tf.device(DEVICE):
        warm = np.random.default_rng(0)
        op_mlp_function(warm, {})
        op_gradient(warm, {}, function=True)
        for ctx in contexts:
            op_sgd_step(warm, ctx)
    if os.environ.get("TF_WGPU_ROBUSTNESS_BARRIER"):
        wait_for_peers(os.environ["TF_WGPU_ROBUSTNESS_BARRIER"])
    pool = [threading.Thread(target=worker, args=(i,), name=f"load-{i}") for i in range(threads)]
    window = [time.time()]
    deadline[0] = time.monotonic() + seconds
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    window.append(time.time())
    faulthandler.cancel_dump_traceback_later()
    emit({"tag": tag, "pid": os.getpid(), "window": window, "threads": results, "memory_stats": memory_stats()})
    return 0 if all(r and not r["failures"] and r["iterations"] > 0 for r in results) else 1


# --------------------------------------------------------------------------------------------
# soak: Keras training, device memory and RSS after every epoch.


def digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return (data.data / 16.0).astype(np.float32), data.target.astype(np.int64)


def soak(steps):
    import keras
    from keras import layers

    faulthandler.dump_traceback_later(240 + 0.15 * steps, exit=True)  # before the test's 300 + 0.2 s/step
    x, y = digits()
    batch = 32
    x, y = x[:1792], y[:1792]  # 56 full batches: one traced shape, no partial last batch
    per_epoch = len(x) // batch
    epochs = max(3, math.ceil(steps / per_epoch))
    keras.utils.set_random_seed(1)
    rows = []

    def record(epoch, logs):
        stats = memory_stats() or dict.fromkeys(("bytes_in_use", "live_allocations", "pooled_bytes"), -1)
        row = {"epoch": epoch + 1, "step": (epoch + 1) * per_epoch, "bytes_in_use": stats["bytes_in_use"],
               "live_allocations": stats["live_allocations"], "pooled_bytes": stats["pooled_bytes"],
               "rss": rss_bytes(), "loss": float(logs["loss"]), "time": time.monotonic() - began}
        rows.append(row)
        print("SOAK-ROW " + json.dumps(row), flush=True)

    with tf.device(DEVICE):
        model = keras.Sequential([keras.Input((64,)), layers.Dense(64, activation="relu"), layers.Dropout(0.1),
                                  layers.Dense(32, activation="relu"), layers.Dense(10)])
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                      jit_compile=False)
        began = time.monotonic()
        history = model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0,
                            callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=record)])
    emit({"steps_per_epoch": per_epoch, "epochs": epochs, "rows": rows,
          "accuracy": float(history.history["accuracy"][-1]), "weights_bytes": 4 * model.count_params()})
    return 0


# --------------------------------------------------------------------------------------------
# oom: a model that does not fit the budget, then a small one in the same process.


def oom():
    """Run with TF_WGPU_MEMORY_LIMIT_MB=256. Three models that do not fit, each failing with
    ResourceExhausted; the device's figures after each clean-up; then a small model that trains."""
    import keras
    from keras import layers

    faulthandler.dump_traceback_later(300, exit=True)
    began = time.monotonic()
    result = {"limit_mb": int(os.environ["TF_WGPU_MEMORY_LIMIT_MB"]), "failures": [], "phases": {}}
    holder = {}  # the model of the case running, so that the clean-up can drop it

    def phase(name):
        """Drops the case's model and Keras's state, then records the device's figures."""
        holder.clear()
        keras.backend.clear_session()
        gc.collect()
        result[name] = memory_stats()
        result["phases"][name] = round(time.monotonic() - began, 2)

    def compiled(model):
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
        return model

    def mlp(width, depth):
        return keras.Sequential([keras.Input((width,))] + [layers.Dense(width, activation="relu") for _ in range(depth)]
                                + [layers.Dense(10)])

    def attempt(name, run):
        stage = {"at": "start"}
        t0 = time.monotonic()
        failure = {"case": name, "type": None, "lines": []}
        try:
            with tf.device(DEVICE):
                run(stage)
        except tf.errors.ResourceExhaustedError as e:
            # The message without the Python stack TF adds to graph errors ("  File ...").
            lines = [line for line in str(e).splitlines() if line.strip() and not line.startswith("  ")]
            failure.update(type=type(e).__name__, lines=lines[:6])
        except Exception as e:  # noqa: BLE001 - the test reports the wrong type
            failure.update(type=type(e).__module__ + "." + type(e).__name__,
                           lines=traceback.format_exc().splitlines()[-12:])
        failure.update(stage=stage["at"], seconds=round(time.monotonic() - t0, 2))
        result["failures"].append(failure)

    # The baseline: the device open and Keras's own state made (a tiny model built, trained and
    # dropped), so that what follows counts only the big models.
    with tf.device(DEVICE):
        tiny = compiled(keras.Sequential([keras.Input((4,)), layers.Dense(2)]))
        tiny.fit(np.ones((8, 4), np.float32), np.zeros(8, np.int64), epochs=1, verbose=0)
    del tiny
    phase("baseline")

    def build_huge(stage):
        # 4 x (5120 x 5120) kernels: 105M parameters, 420 MB of weights (each kernel, 100 MiB, within
        # one binding: 128 MiB on lavapipe). The weights alone do not fit a 256 MiB budget.
        stage["at"] = "build"
        holder["model"] = model = compiled(mlp(5120, 4))
        stage["at"] = "predict"
        model.predict(np.ones((8, 5120), np.float32), verbose=0)

    attempt("build a 105M-parameter MLP", build_huge)
    phase("after_huge_model")

    def predict_huge_batch(stage):
        stage["at"] = "build"
        holder["model"] = model = compiled(keras.Sequential([keras.Input((64,)), layers.Dense(8192), layers.Dense(10)]))
        stage["at"] = "predict"
        # One batch of 16384 rows: the 16384 x 8192 activation alone is 512 MiB.
        model.predict(np.ones((16384, 64), np.float32), batch_size=16384, verbose=0)

    attempt("predict one batch of 16384 rows through Dense(8192)", predict_huge_batch)
    phase("after_huge_batch")

    def train_huge_batch(stage):
        stage["at"] = "build"
        holder["model"] = model = compiled(keras.Sequential([keras.Input((64,)), layers.Dense(4096, activation="relu"),
                                                             layers.Dense(10)]))
        result["batch_model_weight_bytes"] = 4 * model.count_params()
        stage["at"] = "fit"
        # One batch of 16384 rows: the 16384 x 4096 activation alone is 256 MiB.
        model.fit(np.ones((16384, 64), np.float32), np.zeros(16384, np.int64), batch_size=16384, epochs=1, verbose=0)

    attempt("train on one batch of 16384 rows through Dense(4096)", train_huge_batch)
    phase("after_train_huge_batch")

    # Nothing of the failed models holds the budget: three 64 MiB tensors (192 of 256 MiB) fit again.
    try:
        with tf.device(DEVICE):
            blocks = [tf.fill([4096, 4096], float(i)) for i in range(3)]
            result["refill"] = [float(b[i, i].numpy()) for i, b in enumerate(blocks)]
        del blocks
    except tf.errors.ResourceExhaustedError as e:
        result["refill"] = str(e).splitlines()[:3]
    phase("after_refill")

    rng = np.random.default_rng(0)

    def train_big(stage):
        # 4 x (2560 x 2560) kernels: 26M parameters, 105 MB of weights, which fit a 256 MiB budget
        # (initialising a 26 MB kernel takes three such temporaries at most); Adam's two slots and the
        # gradients need 315 MB more, so training cannot.
        stage["at"] = "build"
        holder["model"] = model = compiled(mlp(2560, 4))
        result["adam_model_weight_bytes"] = 4 * model.count_params()
        stage["at"] = "fit"
        model.fit(rng.standard_normal((64, 2560)).astype(np.float32), rng.integers(0, 10, 64), batch_size=32,
                  epochs=1, verbose=0)

    attempt("train a 26M-parameter MLP with Adam", train_big)
    phase("after_train_adam")

    # A small model in the same process: it must train, and predict what TF-CPU predicts.
    x, y = digits()
    keras.utils.set_random_seed(3)
    with tf.device(DEVICE):
        small = keras.Sequential([keras.Input((64,)), layers.Dense(32, activation="relu"), layers.Dense(10)])
        small.compile(optimizer=keras.optimizers.Adam(1e-2),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                      jit_compile=False)
        history = small.fit(x, y, batch_size=64, epochs=4, verbose=0)
        got = small.predict(x, batch_size=256, verbose=0)
    with tf.device("/CPU:0"):
        reference = keras.Sequential([keras.Input((64,)), layers.Dense(32, activation="relu"), layers.Dense(10)])
        reference.compile(jit_compile=False)
        reference.set_weights(small.get_weights())
        want = reference.predict(x, batch_size=256, verbose=0)
    result["small"] = {"losses": [float(v) for v in history.history["loss"]],
                       "accuracy": float(np.mean(np.argmax(got, 1) == y)),
                       "max_abs_diff_vs_cpu": float(np.max(np.abs(got - want))),
                       "max_abs_logit": float(np.max(np.abs(want)))}
    result["after_small"] = memory_stats()
    emit(result)
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "load":
        sys.exit(load(float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    if mode == "soak":
        sys.exit(soak(int(sys.argv[2])))
    if mode == "oom":
        sys.exit(oom())
    sys.exit(f"unknown mode {mode}")
