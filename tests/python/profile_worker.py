"""Profiles one Keras training step on WGPU and prints what the test checks, as JSON.

Usage: profile_worker.py LOGDIR ROUTE, ROUTE being `api` (tf.profiler.experimental.start/stop
around `train_on_batch`) or `callback` (Keras's TensorBoard callback with `profile_batch`).
A plain Keras program: `compile()` with its defaults, no `tf.device`.
"""

import glob
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf
import tensorflow_wgpu


def model():
    keras = tf.keras
    net = keras.Sequential([
        keras.Input((16, 16, 3)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Flatten(),
        keras.layers.Dense(10),
    ])
    net.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return net


def main():
    logdir, route = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16, 16, 3)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    net = model()
    # Traced and run once before the profile: the profiled step is a steady-state step.
    net.train_on_batch(x, y)
    result = {}
    if route == "api":
        before = tensorflow_wgpu.dispatch_count()
        start_ns = time.time_ns()
        tf.profiler.experimental.start(logdir)
        loss = float(net.train_on_batch(x, y))
        tf.profiler.experimental.stop()
        result.update(dispatches=tensorflow_wgpu.dispatch_count() - before, start_ns=start_ns,
                      stop_ns=time.time_ns(), loss=loss)
    else:
        callback = tf.keras.callbacks.TensorBoard(log_dir=logdir, profile_batch=2)
        net.fit(np.concatenate([x] * 3), np.concatenate([y] * 3), batch_size=32, epochs=1, verbose=0,
                callbacks=[callback])
    result["xplanes"] = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
