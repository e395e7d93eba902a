"""The profiler's cost: the median Keras training step (MobileNetV2 at 64x64, batch 4, SGD) before,
during and after a `tf.profiler.experimental` session, in one process, and the time `stop` takes
(collecting and writing the profile).

    .venv/bin/python benches/profiler_overhead.py [LOGDIR]
"""

import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf


def main():
    logdir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="profiler_overhead_")
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(64, 64, 3), weights=None, classes=10,
                                           classifier_activation=None)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(0).standard_normal((4, 64, 64, 3)).astype(np.float32)
    y = np.arange(4)
    for _ in range(3):
        model.train_on_batch(x, y)

    def median_step(count=5):
        times = []
        for _ in range(count):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            times.append(time.perf_counter() - start)
        return float(np.median(times)) * 1e3

    before = median_step()
    tf.profiler.experimental.start(logdir)
    during = median_step()
    start = time.perf_counter()
    tf.profiler.experimental.stop()
    stop = time.perf_counter() - start
    after = median_step()
    print("| step before (ms) | profiled (ms) | after (ms) | stop and write (s) |")
    print("|---|---|---|---|")
    print(f"| {before:.0f} | {during:.0f} | {after:.0f} | {stop:.2f} |")


if __name__ == "__main__":
    main()
