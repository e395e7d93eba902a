"""TF's BFC allocator over the plugin's regions against the plugin's own size-class pool
(`TF_WGPU_ALLOCATOR=bfc|pool`): eager allocation throughput, training-step time and the memory
each holds. Every configuration runs in a process of its own, one after the other.

    .venv/bin/python benches/allocator.py [MODEL ...]

MODEL: MobileNetV2 (keras.applications, 64x64, batch 4), ResNet50 (the same), Dense (an MLP on
batch 256). Default: all three.

Columns: `alloc` the mean time of an eager `tf.zeros` cycling through 256 B .. 64 KiB (one
allocation, one small fill dispatch, one free each: the allocator's share is largest there);
`step` the median `train_on_batch` time of five after two, the better of two processes per
configuration (run in turn: pool, bfc, bfc with growth, then again); `held` the device memory the allocator holds at the end (BFC: its regions; pool: live
buffers plus pooled ones); `held peak` the most the plugin's map held at once (BFC: regions; pool:
live buffers, to which the pool adds up to its capacity); `tensors peak` TF's own peak of tensor
bytes (`get_memory_info`, BFC only).
"""

import json
import os
import subprocess
import sys
import time

CONFIGS = {
    "pool": {"TF_WGPU_ALLOCATOR": "pool"},
    "bfc": {"TF_WGPU_ALLOCATOR": "bfc"},
    "bfc, growth": {"TF_WGPU_ALLOCATOR": "bfc", "TF_FORCE_GPU_ALLOW_GROWTH": "true"},
}
MiB = 1 << 20


def worker(model_name):
    import numpy as np
    import tensorflow as tf
    import keras

    import tensorflow_wgpu

    sizes = [64, 256, 1024, 4096, 16384]  # float32 elements: 256 B .. 64 KiB
    with tf.device("/GPU:0"):
        for n in sizes:
            tf.zeros([n]).numpy()
        count = 2000
        start = time.perf_counter()
        for i in range(count):
            x = tf.zeros([sizes[i % len(sizes)]])
            del x
        tf.zeros([1]).numpy()
        alloc_us = (time.perf_counter() - start) / count * 1e6

        keras.utils.set_random_seed(0)
        if model_name == "Dense":
            model = keras.Sequential([keras.Input((512,))] + [keras.layers.Dense(512, activation="relu")
                                                            for _ in range(4)] + [keras.layers.Dense(10)])
            x = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
        else:
            model = getattr(keras.applications, model_name)(input_shape=(64, 64, 3), weights=None, classes=10,
                                                            classifier_activation=None)
            x = np.random.default_rng(0).standard_normal((4, 64, 64, 3)).astype(np.float32)
        y = np.random.default_rng(1).integers(0, 10, len(x))
        model.compile(optimizer=keras.optimizers.SGD(0.01),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        times = []
        for i in range(7):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            if i >= 2:
                times.append(time.perf_counter() - start)
    stats = tensorflow_wgpu.memory_stats()
    info = tf.config.experimental.get_memory_info("GPU:0")
    print("RESULT " + json.dumps({
        "alloc_us": alloc_us,
        "step_s": float(np.median(times)),
        "held": stats["bytes_in_use"] + stats["pooled_bytes"],
        "held_peak": stats["peak_bytes_in_use"],
        "tensors_peak": info["peak"],
    }))


def run(model, env):
    done = subprocess.run([sys.executable, __file__, "--worker", model], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **env}, check=True)
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main():
    models = sys.argv[1:] or ["Dense", "MobileNetV2", "ResNet50"]
    print("| model | allocator | alloc (µs) | step (ms) | held (MiB) | held peak (MiB) | tensors peak (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for model in models:
        rounds = [{name: run(model, env) for name, env in CONFIGS.items()} for _ in range(2)]
        for name in CONFIGS:
            r = min((one[name] for one in rounds), key=lambda result: result["step_s"])
            r["alloc_us"] = min(one[name]["alloc_us"] for one in rounds)
            tensors = f"{r['tensors_peak'] / MiB:.1f}" if name != "pool" else "–"
            print(f"| {model} | {name} | {r['alloc_us']:.1f} | {r['step_s'] * 1e3:.1f} | {r['held'] / MiB:.1f} | "
                  f"{r['held_peak'] / MiB:.1f} | {tensors} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2])
    else:
        main()
