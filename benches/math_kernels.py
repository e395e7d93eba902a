"""Times the kernels of the math library and the compensated reductions on /GPU:0 (WGPU) and
/CPU:0 in one process, each figure with its WGPU/CPU ratio:

    .venv/bin/python benches/math_kernels.py [--n 4000000] [--repeats 5]

Elementwise functions over n float32 values, Pow of two such tensors, Softmax over rows of 1000,
and sums: everything, over columns (a bias gradient), and batch-norm statistics. Each figure is the
best of `repeats` runs, the result fetched to the host (part of what a user pays).
"""

import argparse

import numpy as np
import tensorflow as tf
from tf_compare import timed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, args.n).astype(np.float32)
    y = rng.uniform(0.1, 3, args.n).astype(np.float32)
    workloads = {
        "Exp": lambda a, b: tf.exp(a),
        "Log1p": lambda a, b: tf.math.log1p(b),
        "Tanh": lambda a, b: tf.tanh(a),
        "Sigmoid": lambda a, b: tf.sigmoid(a),
        "Erf": lambda a, b: tf.math.erf(a),
        "Sin": lambda a, b: tf.sin(a),
        "Pow": lambda a, b: tf.pow(b, a),
        "Softmax (rows of 1000)": lambda a, b: tf.nn.softmax(tf.reshape(a, [-1, 1000])),
        "Sum (all)": lambda a, b: tf.reduce_sum(a),
        "Sum (columns of 64)": lambda a, b: tf.reduce_sum(tf.reshape(a, [-1, 64]), axis=0),
        "FusedBatchNorm statistics": lambda a, b: tf.raw_ops.FusedBatchNormV3(
            x=tf.reshape(a, [-1, 50, 50, 16]), scale=tf.ones([16]), offset=tf.zeros([16]), mean=tf.zeros([0]),
            variance=tf.zeros([0]), is_training=True).batch_mean,
    }
    print(f"n = {args.n}, best of {args.repeats}")
    print(f"{'workload':28} {'WGPU ms':>9} {'CPU ms':>9} {'WGPU/CPU':>9}")
    for name, fn in workloads.items():
        times = []
        for device in ("/GPU:0", "/CPU:0"):
            with tf.device(device):
                a, b = tf.constant(x), tf.constant(y)
                times.append(timed(lambda: fn(a, b).numpy(), args.repeats))
        print(f"{name:28} {times[0] * 1e3:9.2f} {times[1] * 1e3:9.2f} {times[0] / times[1]:9.2f}", flush=True)


if __name__ == "__main__":
    main()
