"""Scatters by element width: the 32-bit word loop (float32), the 8/16-bit lane loop (int8,
bfloat16) and the 64-bit chains (int64, float64; assignments too), at an embedding table's shapes, timed on
/GPU:0 (WGPU) and /CPU:0 in one process with the WGPU/CPU ratio.

    .venv/bin/python benches/scatter_dtypes.py [--repeats N]

Each figure is the best of the repeats after one warm-up run, ending with a one-element fetch
that waits for the device.
"""

import argparse
import time

import numpy as np
import tensorflow as tf

GPU, CPU = "/GPU:0", "/CPU:0"
RNG = np.random.default_rng(0)
ROWS, WIDTH, UPDATES, SEGMENTS = 50_000, 64, 4096, 1000


def values(dtype, shape):
    x = RNG.integers(-50, 50, size=shape)
    return tf.constant(x.astype(np.float32 if dtype == tf.bfloat16 else dtype.as_numpy_dtype), dtype)


def best_time(fn, repeats):
    def once():
        out = fn()
        tf.reshape(out, [-1])[:1].numpy()

    once()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - start)
    return best


def cases(dtype):
    ids = tf.constant(RNG.integers(0, SEGMENTS, size=UPDATES * 4).astype(np.int32))
    rows = tf.constant(RNG.integers(0, ROWS, size=(UPDATES, 1)).astype(np.int32))
    data, updates, table = values(dtype, (UPDATES * 4, WIDTH)), values(dtype, (UPDATES, WIDTH)), values(dtype, (ROWS, WIDTH))
    yield "UnsortedSegmentSum [16384,64] -> 1000", lambda: tf.math.unsorted_segment_sum(data, ids, SEGMENTS)
    yield "TensorScatterAdd [50000,64] += 4096 rows", lambda: tf.tensor_scatter_nd_add(table, rows, updates)
    yield "TensorScatterMax [50000,64] 4096 rows", lambda: tf.tensor_scatter_nd_max(table, rows, updates)
    yield "TensorScatterUpdate [50000,64] 4096 rows", lambda: tf.tensor_scatter_nd_update(table, rows, updates)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"{'case':<44} {'dtype':<9} {'WGPU ms':>9} {'CPU ms':>9} {'ratio':>7}")
    for dtype in (tf.float32, tf.int8, tf.bfloat16, tf.int64, tf.float64):
        for name, fn in cases(dtype):
            times = {}
            for device in (GPU, CPU):
                with tf.device(device):
                    try:
                        times[device] = best_time(fn, args.repeats)
                    except tf.errors.OpError as e:
                        times[device] = None
                        print(f"{name:<44} {dtype.name:<9} {device}: {type(e).__name__}")
            if None not in times.values():
                g, c = times[GPU] * 1e3, times[CPU] * 1e3
                print(f"{name:<44} {dtype.name:<9} {g:9.2f} {c:9.2f} {g / c:7.2f}")


if __name__ == "__main__":
    main()
