"""Runs the same workloads on /GPU:0 (WGPU) and /CPU:0 in one process and prints each figure with
its WGPU/CPU ratio, ending with a one-line summary.

    .venv/bin/python benches/tf_compare.py [--quick]

Absolute times on shared machines are noisy; the ratio from one run is the figure to read.
Workloads the plugin cannot run yet are reported as such, never silently timed on the CPU.
"""

import argparse
import time

import numpy as np
import tensorflow as tf


def timed(fn, repeats, warmup=1):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def on(device, fn):
    def run():
        with tf.device(device):
            return fn()
    return run


def fetch(t):
    # .numpy() waits for the device and copies back: part of what a user pays.
    return t.numpy()


def matmul(n):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    results = {}
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            x, y = tf.identity(tf.constant(a)), tf.identity(tf.constant(b))
        seconds = timed(on(device, lambda x=x, y=y: fetch(tf.matmul(x, y))), repeats=3)
        results[device] = (seconds, 2 * n**3 / seconds / 1e9)
    return results


def conv2d():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 56, 56, 64)).astype(np.float32)
    k = rng.standard_normal((3, 3, 64, 64)).astype(np.float32)
    results = {}
    flops = 2 * 64 * 56 * 56 * 64 * 3 * 3 * 64
    for device in ("/GPU:0", "/CPU:0"):
        with tf.device(device):
            xt, kt = tf.identity(tf.constant(x)), tf.identity(tf.constant(k))
        seconds = timed(on(device, lambda xt=xt, kt=kt: fetch(tf.nn.conv2d(xt, kt, 1, "SAME"))), repeats=3)
        results[device] = (seconds, flops / seconds / 1e9)
    return results


def eager_chain(device, length):
    """`length` dependent 1-element eager muls on `device`, fetched at the end."""
    with tf.device(device):
        t = tf.constant([1.0])
        for _ in range(length):
            t = t * 1.0001
        return fetch(t)


def op_chain(length):
    results = {}
    for device in ("/GPU:0", "/CPU:0"):
        seconds = timed(lambda device=device: eager_chain(device, length), repeats=3)
        results[device] = (seconds, seconds / length * 1e6)
    return results


def training_step(kind):
    import keras
    from keras import layers

    def build():
        keras.utils.set_random_seed(0)
        if kind == "mlp":
            return keras.Sequential([keras.Input((64,)), layers.Dense(128, activation="relu"), layers.Dense(10)]), (128, 64)
        return keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(16, 3, activation="relu"), layers.MaxPooling2D(),
                                 layers.Flatten(), layers.Dense(10)]), (64, 28, 28, 1)

    results = {}
    previous = tf.config.get_soft_device_placement()
    for device in ("/GPU:0", "/CPU:0"):
        # Soft placement off on the WGPU side: a step that would fall back to the CPU is reported, not timed.
        tf.config.set_soft_device_placement(device == "/CPU:0")
        try:
            with tf.device(device):
                model, shape = build()  # variables live on the device under test
                # No XLA: the plugin registers no XLA compiler.
                model.compile(optimizer="sgd", jit_compile=False,
                              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
                y = np.random.default_rng(1).integers(0, 10, size=(shape[0],))
                model.train_on_batch(x, y)
                seconds = timed(lambda: model.train_on_batch(x, y), repeats=3, warmup=0)
            results[device] = (seconds, seconds * 1e3)
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            results[device] = (None, f"cannot run: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    tf.config.set_soft_device_placement(previous)
    return results


def report(name, results, unit):
    gpu, cpu = results["/GPU:0"], results["/CPU:0"]
    if gpu[0] is None or cpu[0] is None:
        print(f"{name:<34} WGPU {gpu[1] if gpu[0] is None else f'{gpu[1]:.2f} {unit}'} | CPU {cpu[1] if cpu[0] is None else f'{cpu[1]:.2f} {unit}'}")
        return None
    ratio = gpu[0] / cpu[0]
    print(f"{name:<34} WGPU {gpu[1]:10.2f} {unit:<8} CPU {cpu[1]:10.2f} {unit:<8} time WGPU/CPU {ratio:8.2f}x")
    return ratio


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    args = parser.parse_args()
    gpus = tf.config.list_physical_devices("GPU")
    assert gpus, "no WGPU device: install the plugin first (pip install .)"
    print("device:", tf.config.experimental.get_device_details(gpus[0]).get("device_name"))
    ratios = {}
    sizes = [256, 512] if args.quick else [256, 512, 1024, 2048]
    for n in sizes:
        ratios[f"matmul {n}"] = report(f"matmul f32 N={n}", matmul(n), "GFLOPS")
    if not args.quick:
        ratios["conv2d"] = report("conv2d 3x3 64x56x56x64", conv2d(), "GFLOPS")
    chain_length = 100 if args.quick else 1000
    ratios["op chain"] = report(f"{chain_length} dependent eager muls", op_chain(chain_length), "us/op")
    for kind in ("mlp", "cnn"):
        ratios[f"{kind} step"] = report(f"Keras {kind.upper()} training step", training_step(kind), "ms")
    done = {k: v for k, v in ratios.items() if v is not None}
    summary = ", ".join(f"{k} {v:.1f}x" for k, v in done.items())
    missing = [k for k, v in ratios.items() if v is None]
    print(f"SUMMARY time WGPU/CPU (lower is better): {summary}" + (f"; not runnable on WGPU yet: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
