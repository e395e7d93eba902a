"""What channels-first layouts and tensors past the storage-binding limit cost (issue 16): each
workload on /GPU:0 (WGPU) and /CPU:0 in one process, with its WGPU/CPU ratio, and the NCHW
figure beside the NHWC one:

    .venv/bin/python benches/layouts_and_windows.py [--repeats 3]

Layouts: a 3x3 Conv2D on a [32, 56, 56, 64] batch (a ResNet stage), its input gradient, a 2x2
MaxPool and training-mode FusedBatchNorm, in NHWC and NCHW (TF-CPU has no NCHW Conv2D or MaxPool:
its column shows its NHWC time). Windows: elementwise, a sum and a softmax over 48M floats
(192 MiB, past lavapipe's 128 MiB binding) beside the same work on 24M floats (96 MiB, one
binding), per million elements. Each figure is the best of `repeats` runs, the result fetched to
the host.
"""

import argparse

import numpy as np
import tensorflow as tf
from tf_compare import timed


def row(name, wgpu, cpu):
    ratio = f"{wgpu / cpu:9.2f}" if cpu else f"{'':>9}"
    cpu_text = f"{cpu * 1e3:9.1f}" if cpu else f"{'-':>9}"
    print(f"{name:44} {wgpu * 1e3:9.1f} {cpu_text} {ratio}", flush=True)


def both(fn, repeats, cpu=True):
    times = []
    for device in ("/GPU:0", "/CPU:0") if cpu else ("/GPU:0",):
        with tf.device(device):
            times.append(timed(lambda: fn().numpy(), repeats))
    return times[0], times[1] if cpu else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    nhwc = tf.constant(rng.standard_normal([32, 56, 56, 64]).astype(np.float32))
    nchw = tf.transpose(nhwc, [0, 3, 1, 2])
    f = tf.constant(rng.standard_normal([3, 3, 64, 64]).astype(np.float32) * 0.05)
    ones, zeros = tf.ones([64]), tf.zeros([64])
    print(f"{'workload':44} {'WGPU ms':>9} {'CPU ms':>9} {'WGPU/CPU':>9}")
    layouts = {
        "Conv2D 3x3": lambda x, fmt: tf.nn.conv2d(x, f, 1, "SAME", data_format=fmt),
        "Conv2DBackpropInput 3x3": lambda x, fmt: tf.raw_ops.Conv2DBackpropInput(
            input_sizes=x.shape, filter=f, out_backprop=x, strides=[1, 1, 1, 1], padding="SAME", data_format=fmt),
        "MaxPool 2x2": lambda x, fmt: tf.nn.max_pool2d(x, 2, 2, "VALID", data_format=fmt),
        "FusedBatchNormV3 (training)": lambda x, fmt: tf.raw_ops.FusedBatchNormV3(
            x=x, scale=ones, offset=zeros, mean=tf.zeros([0]), variance=tf.zeros([0]), is_training=True,
            data_format=fmt).y,
    }
    for name, fn in layouts.items():
        wgpu, cpu = both(lambda: fn(nhwc, "NHWC"), args.repeats)
        row(f"{name} NHWC", wgpu, cpu)
        # TF-CPU's FusedBatchNorm serves NCHW; its Conv2D and MaxPool do not.
        nchw_cpu = name.startswith("FusedBatchNorm")
        wgpu, cpu = both(lambda: fn(nchw, "NCHW"), args.repeats, cpu=nchw_cpu)
        row(f"{name} NCHW", wgpu, cpu)
    for n, label in [(24 << 20, "96 MiB, one binding"), (48 << 20, "192 MiB, windows")]:
        x = tf.constant(rng.standard_normal(n).astype(np.float32))
        per_million = 1e6 / n
        windows = {
            "x * 2 + 1": lambda: x * 2 + 1,
            "reduce_sum": lambda: tf.reduce_sum(x),
            "softmax (rows of 1024)": lambda: tf.nn.softmax(tf.reshape(x, [-1, 1024])),
        }
        for name, fn in windows.items():
            wgpu, cpu = both(fn, args.repeats)
            row(f"{name}, {label} (per 1M)", wgpu * per_million, cpu * per_million)


if __name__ == "__main__":
    main()
