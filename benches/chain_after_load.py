"""The eager op chain of tf_compare.py, timed before and after a heavy WGPU workload, in one process.

    .venv/bin/python benches/chain_after_load.py [--rounds N]

Why: on lavapipe every dispatch wakes Mesa's compute thread pool. Until a heavy workload spreads
the pool's threads over both cores of a 2-core machine they share one, and the Python thread has
the other to itself; afterwards the wake-ups preempt it. When every small op was a dispatch of its
own, the chain ran 3-5x slower after the matmuls (67-114 us/op against 25). Small f32 binary ops
now share dispatches (`main_batch` in `wgsl/binary.wgsl`), and the two figures should stay close.
"""

import argparse
import time

import numpy as np
import tensorflow as tf

from tf_compare import eager_chain


def chain_us_per_op(device, length=1000):
    start = time.perf_counter()
    eager_chain(device, length)
    return (time.perf_counter() - start) / length * 1e6


def heavy_matmul():
    a = np.random.default_rng(0).standard_normal((2048, 2048)).astype(np.float32)
    with tf.device("/GPU:0"):
        x = tf.identity(tf.constant(a))
        for _ in range(3):
            tf.matmul(x, x).numpy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    assert tf.config.list_physical_devices("GPU"), "no WGPU device: install the plugin first (pip install .)"
    chain_us_per_op("/GPU:0")
    chain_us_per_op("/CPU:0")
    cpu = min(chain_us_per_op("/CPU:0") for _ in range(3))
    fresh = [chain_us_per_op("/GPU:0") for _ in range(3)]
    print(f"TF-CPU chain (best of 3)            {cpu:7.1f} us/op")
    print(f"WGPU chain, fresh process           {' '.join(f'{t:7.1f}' for t in fresh)} us/op")
    for r in range(args.rounds):
        heavy_matmul()
        after = [chain_us_per_op("/GPU:0") for _ in range(3)]
        print(f"WGPU chain after 3 matmuls N=2048 ({r + 1}) {' '.join(f'{t:7.1f}' for t in after)} us/op")


if __name__ == "__main__":
    main()
