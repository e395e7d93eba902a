"""The routes this repository added for work past one invocation's loop or one storage binding,
timed on /GPU:0 (WGPU) and /CPU:0 in one process with the WGPU/CPU ratio: TopKV2 on long rows
(`tf.sort`, `tf.math.top_k`: a bitonic network), InTopK on a vocabulary's classes (counts in
chunks), pools whose windows pass the loop cap (one axis at a time), and scatters into and gathers
from a table larger than a binding (windows of rows).

    .venv/bin/python benches/long_rows_and_big_tables.py [--repeats N] [--only TEXT]

Each figure is the best of the repeats after one warm-up run, ending with a one-element fetch
that waits for the device.
"""

import argparse

import numpy as np
import tensorflow as tf

from scatter_dtypes import best_time

GPU, CPU = "/GPU:0", "/CPU:0"
RNG = np.random.default_rng(0)


def normal(*shape):
    return tf.constant(RNG.standard_normal(shape).astype(np.float32))


def cases():
    for n in (1 << 16, 1 << 18, 1 << 20):
        x = normal(n)
        yield f"tf.sort [{n}]", lambda x=x: tf.sort(x)
    rows = normal(8, 100_000)
    yield "top_k [8,100000] k=10", lambda: tf.math.top_k(rows, 10)[0]
    logits = normal(64, 50_000)
    targets = tf.constant(RNG.integers(0, 50_000, 64).astype(np.int32))
    yield "in_top_k [64,50000] k=5", lambda: tf.math.in_top_k(targets, logits, 5)
    image = normal(4, 300, 300, 8)
    yield "max_pool2d [4,300,300,8] window 300", lambda: tf.nn.max_pool2d(image, 300, 1, "VALID")
    yield "avg_pool2d [4,300,300,8] window 300", lambda: tf.nn.avg_pool2d(image, 300, 1, "VALID")
    # A 256 MiB embedding table (past lavapipe's 128 MiB binding), one per device: a variable's
    # updates run where it lives.
    ids = tf.constant(RNG.integers(0, 1_000_000, 4096).astype(np.int32))
    updates = normal(4096, 64)
    tables = {}

    def table():
        # The device scope in force: where a new tensor lands.
        key = tf.zeros([1]).device
        if key not in tables:
            tables[key] = tf.Variable(tf.zeros([1_000_000, 64]))
        return tables[key]

    def scatter_add():
        variable = table()
        variable.scatter_add(tf.IndexedSlices(updates, ids))
        return variable.sparse_read(ids[:1])

    yield "Variable [1000000,64] scatter_add 4096 rows", scatter_add
    yield "gather_nd [1000000,64] 4096 rows", lambda: tf.gather_nd(table(), ids[:, None])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    print(f"{'case':<46} {'WGPU ms':>9} {'CPU ms':>9} {'ratio':>7}")
    for name, fn in cases():
        if args.only not in name:
            continue
        times = {}
        for device in (GPU, CPU):
            with tf.device(device):
                try:
                    times[device] = best_time(fn, args.repeats)
                except tf.errors.OpError as e:
                    times[device] = None
                    print(f"{name:<46} {device}: {type(e).__name__}")
        if None not in times.values():
            g, c = times[GPU] * 1e3, times[CPU] * 1e3
            print(f"{name:<46} {g:9.1f} {c:9.1f} {g / c:7.2f}", flush=True)


if __name__ == "__main__":
    main()
